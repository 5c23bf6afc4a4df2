/* The authoring pages: CodeMirror 6 editors over every file's textarea (which stays the
 * form field; data-language: python, markdown or toml), the line a package problem points
 * at marked in its file's editor, a live preview of the statement (rendered by the server
 * with the learner page's Markdown and sanitiser, then KaTeX here), and the validation's
 * rows as they arrive (polled while the job is queued or running). */
(function () {
  "use strict";

  var PREVIEW_DELAY_MS = 400;
  var POLL_MS = 1500;
  var editors = 0;
  var byPath = {};  // a package file's path -> its editor

  function csrfToken() {
    var field = document.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  var FOCUSABLE = "a[href], button:not([disabled]), input:not([disabled]):not([type=hidden]), " +
    "select:not([disabled]), textarea:not([disabled]), summary, [tabindex]";

  // Esc in an editor (where Tab indents): the keyboard goes on to the first control after
  // it, so no editor is a trap (WCAG 2.1.2). Another editor's content is in its shadow root,
  // out of this search: Tab goes on into it.
  function focusAfter(host) {
    var all = document.querySelectorAll(FOCUSABLE);
    for (var i = 0; i < all.length; i += 1) {
      var next = all[i];
      var after = host.compareDocumentPosition(next) & Node.DOCUMENT_POSITION_FOLLOWING;
      if (after && next.tabIndex >= 0 && next.getClientRects().length) {
        next.focus();
        return;
      }
    }
    document.getElementById("content").focus();
  }

  function attachEditor(textarea, onSubmit) {
    if (typeof window.gradlabEditor === "undefined") { return null; }
    var host = null;
    var editor = window.gradlabEditor.attach(textarea, {
      onSubmit: onSubmit || function () {},
      onEscape: function () { if (host) { focusAfter(host); } },
      language: textarea.dataset.language
    });
    editors += 1;
    host = editor.view.dom.getRootNode().host;
    if (host) {
      host.id = textarea.id ? textarea.id + "-editor" : "code-editor-" + editors;
      if (textarea.dataset.path) { host.dataset.path = textarea.dataset.path; }
      if (textarea.dataset.language) { host.dataset.language = textarea.dataset.language; }
    }
    if (textarea.dataset.path) { byPath[textarea.dataset.path] = editor; }
    return editor;
  }

  // The package problem's line (data-file, data-line of #package-problem), marked in its
  // file's editor; its link opens that file and shows the line.
  function markProblem(problem) {
    var editor = byPath[problem.dataset.file];
    var line = parseInt(problem.dataset.line || "0", 10);
    if (!editor || !line) { return; }
    editor.markLine(line);
    var link = document.getElementById("problem-link");
    if (!link) { return; }
    link.addEventListener("click", function (event) {
      event.preventDefault();
      var host = editor.view.dom.getRootNode().host;
      for (var node = host; node; node = node.parentElement) {
        if (node.tagName === "DETAILS") { node.open = true; }
      }
      editor.markLine(line, { show: true });
    });
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

  // The editor's one form (#author-form, with the inputs that name it from outside): a
  // change marks the page unsaved (a note, and a warning before leaving it); its own
  // submits (Save, Validate, Publish, Save dates all save first) leave without one; Ctrl+S
  // (Cmd+S) saves it.
  function guardUnsaved(form) {
    var dirty = false;
    var note = document.getElementById("unsaved-note");
    function mark(event) {
      var field = event.target;
      if (!field || field.form !== form || dirty) { return; }
      dirty = true;
      form.dataset.unsaved = "1";
      if (note) { note.hidden = false; }
    }
    // Capture: an editor tells its textarea with an "input" event that does not bubble.
    document.addEventListener("input", mark, true);
    document.addEventListener("change", mark, true);
    form.addEventListener("submit", function () { dirty = false; });
    window.addEventListener("beforeunload", function (event) {
      if (!dirty) { return; }
      event.preventDefault();
      event.returnValue = "";  // older Chromium asks for it
    });
    var save = document.getElementById("save-button");
    window.addEventListener("keydown", function (event) {
      var key = (event.key || "").toLowerCase();
      if (key !== "s" || !(event.ctrlKey || event.metaKey) || event.altKey) { return; }
      event.preventDefault();
      if (save) { form.requestSubmit(save); }
    }, true);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var authorForm = document.getElementById("author-form");
    if (authorForm) { guardUnsaved(authorForm); }
    document.querySelectorAll("textarea[data-language]").forEach(function (textarea) {
      attachEditor(textarea);
    });
    var problem = document.getElementById("package-problem");
    if (problem) { markProblem(problem); }
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
