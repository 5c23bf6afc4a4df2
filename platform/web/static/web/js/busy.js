/* Forms that start slow work (validation, regrade) say so while the request runs. */
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form[data-busy-message]").forEach(function (form) {
      form.addEventListener("submit", function () {
        var note = form.querySelector(".busy-note");
        if (note) { note.textContent = form.dataset.busyMessage; note.hidden = false; }
        var button = form.querySelector("button[type=submit]");
        if (button) { window.setTimeout(function () { button.disabled = true; }, 0); }
      });
    });
  });
})();
