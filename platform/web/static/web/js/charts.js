/* Loss curves: the learner's curve over the reference curve (Chart.js, served locally).
 * Each <canvas class="loss-chart" data-curves="ID"> names a json_script element holding
 * {"learner": [...], "reference": [...]}. Non-finite values arrive as strings and are
 * drawn as gaps. Without JavaScript the same numbers are in a table next to the canvas. */
(function () {
  "use strict";

  function toPoint(value) {
    return typeof value === "number" && isFinite(value) ? value : null;
  }

  function series(values) {
    return Array.isArray(values) ? values.map(toPoint) : [];
  }

  function wantsLogScale(all) {
    var finite = all.filter(function (v) { return v !== null; });
    if (finite.length < 2) { return false; }
    var min = Math.min.apply(null, finite);
    var max = Math.max.apply(null, finite);
    return min > 0 && max / min > 1000;
  }

  function logTick(value) {
    var exponent = Math.log10(value);
    return Math.abs(exponent - Math.round(exponent)) < 1e-9 ? "1e" + Math.round(exponent) : "";
  }

  function linearTick(value) {
    return Number(value.toPrecision(3)).toString();
  }

  function draw(canvas) {
    if (canvas.dataset.drawn === "1" || typeof window.Chart === "undefined") { return; }
    var source = document.getElementById(canvas.dataset.curves);
    if (!source) { return; }
    var curves = JSON.parse(source.textContent || "{}");
    var learner = series(curves.learner);
    var reference = series(curves.reference);
    var steps = Math.max(learner.length, reference.length);
    var labels = [];
    for (var i = 1; i <= steps; i += 1) { labels.push(i); }
    var datasets = [{
      label: "Your loss",
      data: learner,
      borderColor: "#1f5fbf",
      backgroundColor: "#1f5fbf",
      borderWidth: 3,
      pointRadius: steps > 40 ? 0 : 3,
      spanGaps: false
    }];
    if (reference.length) {
      datasets.push({
        label: "Reference loss",
        data: reference,
        borderColor: "#6b7280",
        backgroundColor: "#6b7280",
        borderDash: [6, 4],
        borderWidth: 2,
        pointRadius: 0
      });
    }
    var logScale = wantsLogScale(learner.concat(reference));
    canvas.dataset.drawn = "1";
    new window.Chart(canvas, {
      type: "line",
      data: { labels: labels, datasets: datasets },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        interaction: { mode: "index", intersect: false },
        plugins: { legend: { position: "bottom" } },
        scales: {
          x: {
            title: { display: true, text: "training step (one backward call each)" },
            ticks: { maxTicksLimit: 12 }
          },
          y: {
            type: logScale ? "logarithmic" : "linear",
            title: { display: true, text: logScale ? "loss (log scale)" : "loss" },
            ticks: { callback: logScale ? logTick : linearTick }
          }
        }
      }
    });
  }

  function drawAll(root) {
    (root || document).querySelectorAll("canvas.loss-chart").forEach(draw);
  }

  window.gradlabCharts = { drawAll: drawAll };
  document.addEventListener("DOMContentLoaded", function () { drawAll(document); });
})();
