/* The exercise page: a CodeMirror 6 editor over the plain <textarea> (which still works
 * without JavaScript), submission with fetch + CSRF, and live status by polling a small
 * JSON endpoint until the submission is graded. */
(function () {
  "use strict";

  // A zygote grades a submission in about 0.2 s (README: Benchmark): the second poll
  // then finds it graded, and the backoff bounds the polls of a slow one.
  var POLL_FIRST_MS = 150;
  var POLL_MAX_MS = 2000;
  var POLL_GIVE_UP_MS = 10 * 60 * 1000;
  var STATUS_TEXT = {
    queued: "Queued: waiting for a grader…",
    running: "Running your code in the sandbox…",
    graded: "Graded.",
    failed: "Your run did not finish."
  };

  // "Queued: position 3 in line, about 20 s…" from the status's queue place and estimate.
  function queuedText(queue) {
    if (!queue) { return STATUS_TEXT.queued; }
    var text = queue.position === 1 ? "Queued: next in line" : "Queued: position " + queue.position + " in line";
    if (typeof queue.estimated_wait_s === "number") {
      text += ", about " + queue.estimated_wait_s + " s";
    }
    return text + "…";
  }

  function statusText(data) {
    return data.status === "queued" ? queuedText(data.queue) : (STATUS_TEXT[data.status] || data.status);
  }

  // A signed-out session answers every request with a redirect to the sign-in page.
  var SIGNED_OUT = "Your session expired: sign in again (in another tab, to keep the code in this editor), then submit again.";

  function signedOut(response) {
    return response.redirected && response.url.indexOf("/accounts/login/") !== -1;
  }

  function csrfToken(form) {
    var field = form.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function setStatus(box, state, text) {
    box.dataset.state = state;
    box.replaceChildren();
    if (state === "queued" || state === "running") {
      var spin = document.createElement("span");
      spin.className = "spinner";
      spin.setAttribute("aria-hidden", "true");
      box.appendChild(spin);
    }
    var span = document.createElement("span");
    span.textContent = text;
    box.appendChild(span);
  }

  // The CodeMirror 6 editor (vendor/codemirror/editor.js, built from frontend/editor.js)
  // over the textarea; without it the textarea stays, with Ctrl/Cmd+Enter to submit.
  function makeEditor(textarea, form, submitButton) {
    var submit = function () { form.requestSubmit(); };
    if (typeof window.gradlabEditor === "undefined") {
      textarea.addEventListener("keydown", function (event) {
        if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
          event.preventDefault();
          submit();
        }
      });
      return null;
    }
    return window.gradlabEditor.attach(textarea, {
      onSubmit: submit,
      // Tab indents inside the editor, so Escape is the keyboard way out of it.
      onEscape: function () { submitButton.focus(); }
    });
  }

  // Only the newest submission's poller may update the page.
  var generation = 0;

  function poller(statusUrl, statusBox, feedback, history, submitButton) {
    var started = Date.now();
    var delay = POLL_FIRST_MS;
    var mine = ++generation;

    function finish(data) {
      if (data.feedback_html !== undefined) {
        feedback.innerHTML = data.feedback_html;
        if (window.gradlabCharts) { window.gradlabCharts.drawAll(feedback); }
      }
      if (history && data.history_html !== undefined) { history.innerHTML = data.history_html; }
      var text = STATUS_TEXT[data.status] || data.status;
      if (data.status === "graded" && typeof data.score === "number") {
        text = "Graded: " + data.score + " / " + data.max_score + (data.passed ? ", full marks." : ".");
      }
      setStatus(statusBox, data.status, text);
      submitButton.disabled = false;
      var heading = feedback.querySelector("h2, h3");
      if (heading) { heading.setAttribute("tabindex", "-1"); }
    }

    function tick() {
      fetch(statusUrl, { headers: { "Accept": "application/json" }, credentials: "same-origin" })
        .then(function (response) {
          if (signedOut(response)) { return { signedOut: true }; }
          if (!response.ok) { throw new Error("HTTP " + response.status); }
          return response.json();
        })
        .then(function (data) {
          if (mine !== generation) { return; }
          if (data.signedOut) {
            setStatus(statusBox, "error", SIGNED_OUT);
            submitButton.disabled = false;
            return;
          }
          if (data.done) { finish(data); return; }
          setStatus(statusBox, data.status, statusText(data));
          schedule();
        })
        .catch(function () {
          if (mine !== generation) { return; }
          setStatus(statusBox, "error", "Lost contact with the server; retrying…");
          schedule();
        });
    }

    function schedule() {
      if (Date.now() - started > POLL_GIVE_UP_MS) {
        setStatus(statusBox, "error", "Still not graded. Reload the page later to see the result.");
        submitButton.disabled = false;
        return;
      }
      window.setTimeout(tick, delay);
      delay = Math.min(POLL_MAX_MS, Math.round(delay * 1.5));
    }

    return tick;
  }

  function errorText(data) {
    if (!data) { return "The submission was not accepted."; }
    if (data.error) { return data.error; }
    if (data.errors) {
      return Object.keys(data.errors).map(function (k) { return data.errors[k].join(" "); }).join(" ");
    }
    return "The submission was not accepted.";
  }

  function init() {
    var form = document.getElementById("submit-form");
    if (!form) { return; }
    var textarea = form.querySelector("textarea[name=code]");
    var submitButton = form.querySelector("button[type=submit]");
    var statusBox = document.getElementById("live-status");
    var feedback = document.getElementById("feedback");
    var history = document.getElementById("history");
    var editor = makeEditor(textarea, form, submitButton);
    document.documentElement.classList.add("js");

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      if (submitButton.disabled) { return; }
      if (editor) { editor.save(); }
      var origin = document.getElementById("editor-origin");
      if (origin) { origin.remove(); }
      submitButton.disabled = true;
      setStatus(statusBox, "queued", "Sending…");
      fetch(form.action, {
        method: "POST",
        body: new FormData(form),
        credentials: "same-origin",
        headers: { "Accept": "application/json", "X-CSRFToken": csrfToken(form) }
      })
        .then(function (response) {
          if (signedOut(response)) { return { signedOut: true }; }
          return response.json().catch(function () { return null; }).then(function (data) {
            return { ok: response.ok, data: data };
          });
        })
        .then(function (result) {
          if (result.signedOut) {
            setStatus(statusBox, "error", SIGNED_OUT);
            submitButton.disabled = false;
            return;
          }
          if (!result.ok || !result.data || !result.data.status_url) {
            setStatus(statusBox, "error", errorText(result.data));
            submitButton.disabled = false;
            return;
          }
          setStatus(statusBox, result.data.status, statusText(result.data));
          // Accepted: the learner may submit again while this one is graded.
          submitButton.disabled = false;
          poller(result.data.status_url, statusBox, feedback, history, submitButton)();
        })
        .catch(function () {
          setStatus(statusBox, "error", "Could not reach the server. Your code is still in the editor; try again.");
          submitButton.disabled = false;
        });
    });

    // A submission still being graded when the page was opened: follow it too.
    var pending = feedback && feedback.dataset.pendingStatusUrl;
    if (pending) {
      poller(pending, statusBox, feedback, history, submitButton)();
    }
  }

  document.addEventListener("DOMContentLoaded", init);
})();
