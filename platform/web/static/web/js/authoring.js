/* The authoring pages: CodeMirror 6 editors over the Python files' textareas (which stay
 * the form fields), a live preview of the statement (rendered by the server with the
 * learner page's Markdown and sanitiser, then KaTeX here), and the validation's result
 * as it arrives (polled while the job is queued or running). */
(function () {
  "use strict";

  var PREVIEW_DELAY_MS = 400;
  var POLL_MS = 1500;
  var editors = 0;

  function csrfToken() {
    var field = document.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function attachEditor(textarea, onSubmit) {
    if (typeof window.gradlabEditor === "undefined") { return; }
    var editor = window.gradlabEditor.attach(textarea, {
      onSubmit: onSubmit || function () {},
      onEscape: function () {}
    });
    editors += 1;
    var host = editor.view.dom.getRootNode().host;
    if (host) { host.id = "code-editor-" + editors; }
  }

  function renderMath(element) {
    if (typeof window.renderMathInElement !== "function") { return; }
    window.renderMathInElement(element, {
      delimiters: [
        { left: "$$", right: "$$", display: true },
        { left: "$", right: "$", display: false }
      ],
      throwOnError: false
    });
  }

  function livePreview(textarea, preview) {
    var timer = null;
    var asked = 0;
    textarea.addEventListener("input", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(function () {
        var mine = ++asked;
        var body = new URLSearchParams({ statement: textarea.value });
        fetch(textarea.dataset.previewUrl, {
          method: "POST",
          headers: { "X-CSRFToken": csrfToken() },
          body: body,
          credentials: "same-origin"
        }).then(function (response) { return response.json(); }).then(function (data) {
          if (mine !== asked) { return; }
          preview.innerHTML = data.html;  // sanitised by the server (nh3 allow-list)
          preview.dataset.rendered = String(mine);
          renderMath(preview);
        });
      }, PREVIEW_DELAY_MS);
    });
  }

  function pollValidation(box) {
    if (!box.dataset.pending) { return; }
    window.setTimeout(function tick() {
      fetch(box.dataset.statusUrl, { credentials: "same-origin" })
        .then(function (response) { return response.json(); })
        .then(function (data) {
          box.innerHTML = data.html;  // our own template, rendered by the server
          if (data.pending) { window.setTimeout(tick, POLL_MS); } else { delete box.dataset.pending; }
        });
    }, POLL_MS);
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("textarea.python-file").forEach(function (textarea) {
      attachEditor(textarea);
    });
    var code = document.getElementById("id_code");
    if (code) {
      var form = document.getElementById("submit-form");
      attachEditor(code, function () { form.requestSubmit(); });
    }
    var statement = document.getElementById("statement-text");
    var preview = document.getElementById("statement-preview");
    if (statement && preview) { livePreview(statement, preview); }
    var box = document.getElementById("validation-result");
    if (box) { pollValidation(box); }
  });
})();
