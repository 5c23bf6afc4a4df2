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

  // The line a crash or syntax error names (data-error-line of the feedback's crash box),
  // marked in the editor while it still holds that submission's code (its history <pre>).
  function markErrorLine(feedback, editor) {
    if (!editor || !feedback) { return; }
    var crash = feedback.querySelector("[data-error-line]");
    var box = feedback.querySelector(".feedback[data-submission]");
    if (!crash || !box) { return; }
    var code = document.getElementById("attempt-code-" + box.dataset.submission);
    if (!code || code.textContent !== editor.value()) { return; }
    editor.markLine(parseInt(crash.dataset.errorLine, 10));
  }

  // The keyboard's way from the status line (right after the Submit button) to the new
  // feedback: the link moves the focus to its heading (WCAG 2.4.3 focus order).
  function readFeedbackLink() {
    var link = document.createElement("a");
    link.href = "#feedback-heading";
    link.className = "read-feedback";
    link.textContent = "Read the feedback";
    link.addEventListener("click", function (event) {
      event.preventDefault();
      focusInView(document.getElementById("feedback-heading"));
    });
    return link;
  }

  function focusInView(element) {
    if (!element) { return; }
    element.focus({ preventScroll: true });
    element.scrollIntoView({ block: "start" });
  }

  // "Jump to editor" (a phone's one column puts the statement first): the focus goes into
  // the editor, or the plain textarea without it.
  function jumpToEditor(editor, textarea) {
    var link = document.getElementById("jump-to-editor");
    if (!link) { return; }
    link.addEventListener("click", function (event) {
      event.preventDefault();
      var frame = textarea.closest(".editor-frame") || textarea;
      frame.scrollIntoView({ block: "start" });
      if (editor) { editor.focus(); } else { textarea.focus({ preventScroll: true }); }
    });
  }

  // Only the newest submission's poller may update the page.
  var generation = 0;

  function poller(statusUrl, statusBox, feedback, history, submitButton, editor) {
    var started = Date.now();
    var delay = POLL_FIRST_MS;
    var mine = ++generation;

    function finish(data) {
      if (data.feedback_html !== undefined) {
        feedback.innerHTML = data.feedback_html;
        if (window.gradlabCharts) { window.gradlabCharts.drawAll(feedback); }
      }
      if (history && data.history_html !== undefined) { history.innerHTML = data.history_html; }
      markErrorLine(feedback, editor);
      var text = STATUS_TEXT[data.status] || data.status;
      if (data.status === "graded" && typeof data.score === "number") {
        var uncounted = data.late && !data.late_counts;
        text = "Graded: " + data.score + " / " + data.max_score + (data.passed && !uncounted ? ", full marks." : ".");
        if (data.late) {
          text += uncounted ? " Submitted after the due date: it does not count towards your grade." : " Submitted after the due date: marked late.";
        }
      }
      setStatus(statusBox, data.status, text);
      statusBox.appendChild(readFeedbackLink());
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

  // -- drafts: the unsent code, posted to the server as the learner types -------------
  // (submissions.drafts: it survives a reload, another device and a new session). Until
  // the server has it, the code is also kept in this browser's localStorage, so that what
  // was typed after the session expired is saved once the learner has signed in again.
  var DRAFT_DELAY_MS = 1200;

  function readLocal(key) {
    try {
      var raw = window.localStorage.getItem(key);
      return raw ? JSON.parse(raw) : null;
    } catch (error) { return null; }
  }

  function writeLocal(key, value) {
    try {
      if (value === null) { window.localStorage.removeItem(key); } else { window.localStorage.setItem(key, JSON.stringify(value)); }
    } catch (error) { /* storage full or disabled: the server copy is the one that counts */ }
  }

  function drafts(form, textarea, editor) {
    var url = form.dataset.draftUrl;
    var key = form.dataset.draftKey;
    var bar = document.getElementById("draft-bar");
    var status = document.getElementById("draft-status");
    var timer = null;
    var sent = textarea.value;

    function current() { return editor ? editor.value() : textarea.value; }

    function say(text) { if (status) { status.textContent = text; } }

    function save() {
      timer = null;
      var code = current();
      if (code === sent) { writeLocal(key, null); return; }
      var body = new FormData();
      body.append("code", code);
      fetch(url, {
        method: "POST",
        body: body,
        credentials: "same-origin",
        headers: { "Accept": "application/json", "X-CSRFToken": csrfToken(form) }
      })
        .then(function (response) {
          if (signedOut(response) || response.status === 403) {
            say("Not saved: your session expired. Sign in again, then reload this page: this browser keeps the code until then.");
            return;
          }
          if (!response.ok) {
            return response.json().catch(function () { return null; }).then(function (data) {
              say("Not saved: " + errorText(data));
            });
          }
          return response.json().then(function (data) {
            sent = code;
            if (current() === code) { writeLocal(key, null); }
            say("Draft saved " + data.saved + ".");
          });
        })
        .catch(function () { say("Not saved: could not reach the server. This browser keeps the code."); });
    }

    function changed() {
      writeLocal(key, { code: current(), at: new Date().toISOString() });
      if (timer !== null) { window.clearTimeout(timer); }
      timer = window.setTimeout(save, DRAFT_DELAY_MS);
    }

    function replace(text, words) {
      if (editor) { editor.setValue(text); } else { textarea.value = text; textarea.dispatchEvent(new Event("input")); }
      var origin = document.getElementById("editor-origin");
      if (origin) { origin.textContent = words; }
      say(words);
    }

    textarea.addEventListener("input", changed);
    // Leaving the page (Back, a link, closing the tab) before the delay ran out: send now.
    window.addEventListener("pagehide", function () {
      if (timer === null || !navigator.sendBeacon) { return; }
      window.clearTimeout(timer);
      timer = null;
      var body = new FormData();
      body.append("code", current());
      body.append("csrfmiddlewaretoken", csrfToken(form));
      navigator.sendBeacon(url, body);
    });
    var starter = document.getElementById("starter-code");
    var reset = document.getElementById("reset-starter");
    if (reset && starter) {
      reset.addEventListener("click", function () {
        replace(JSON.parse(starter.textContent), "Starter code loaded" + (editor ? " (Ctrl+Z brings your code back)." : "."));
        if (editor) { editor.focus(); }
      });
    }
    if (bar) { bar.hidden = false; }

    // Code typed here that the server never got (the session had expired): newer than the
    // server's draft, it wins and is sent now.
    var local = readLocal(key);
    var serverAt = form.dataset.draftSavedAt ? Date.parse(form.dataset.draftSavedAt) : 0;
    if (local && typeof local.code === "string" && local.code !== current() && Date.parse(local.at) > serverAt) {
      replace(local.code, "Restored the code you typed before you signed in again.");
      changed();
    } else if (local) {
      writeLocal(key, null);
    }

    return {
      // The code just submitted is no longer a draft to restore.
      submitted: function () { sent = current(); writeLocal(key, null); },
      load: replace
    };
  }

  // "Load this attempt into the editor": the attempt's code is the <pre> beside the button.
  function attempts(history, keeper, editor) {
    if (!history || !keeper) { return; }
    function reveal() {
      history.querySelectorAll(".attempt-actions").forEach(function (p) { p.hidden = false; });
    }
    reveal();
    new MutationObserver(reveal).observe(history, { childList: true, subtree: true });
    history.addEventListener("click", function (event) {
      var button = event.target.closest(".load-attempt");
      if (!button) { return; }
      var code = document.getElementById("attempt-code-" + button.dataset.attempt);
      if (!code) { return; }
      keeper.load(code.textContent, "Loaded submission #" + button.dataset.attempt + (editor ? " (Ctrl+Z brings your code back)." : "."));
      if (editor) { editor.focus(); } else { document.getElementById("id_code").focus(); }
    });
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
    var keeper = form.dataset.draftUrl ? drafts(form, textarea, editor) : null;
    attempts(history, keeper, editor);
    jumpToEditor(editor, textarea);

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
          if (keeper) { keeper.submitted(); }
          // Accepted: the learner may submit again while this one is graded.
          submitButton.disabled = false;
          poller(result.data.status_url, statusBox, feedback, history, submitButton, editor)();
        })
        .catch(function () {
          setStatus(statusBox, "error", "Could not reach the server. Your code is still in the editor; try again.");
          submitButton.disabled = false;
        });
    });

    // A submission still being graded when the page was opened: follow it too.
    var pending = feedback && feedback.dataset.pendingStatusUrl;
    if (pending) {
      poller(pending, statusBox, feedback, history, submitButton, editor)();
    }
    markErrorLine(feedback, editor);
  }

  document.addEventListener("DOMContentLoaded", init);
})();
