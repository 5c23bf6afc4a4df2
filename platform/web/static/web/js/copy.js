/* "Copy" buttons (data-copy: the id of the field whose value they copy), shown only where
 * JavaScript runs; without it the field is still there to select and copy. The button says
 * "Copied" for a moment, and a polite live region tells a screen reader. */
(function () {
  "use strict";
  var SAID_FOR_MS = 2000;

  function copied(button, status, text) {
    var label = button.textContent;
    button.textContent = text;
    status.textContent = text;
    window.setTimeout(function () {
      button.textContent = label;
      status.textContent = "";
    }, SAID_FOR_MS);
  }

  function copy(button, status) {
    var field = document.getElementById(button.dataset.copy);
    if (!field) { return; }
    field.select();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(
        function () { copied(button, status, "Copied"); },
        function () { copied(button, status, "Press Ctrl+C to copy"); }
      );
    } else {
      copied(button, status, document.execCommand("copy") ? "Copied" : "Press Ctrl+C to copy");
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    var status = document.getElementById("copy-status");
    if (!status) { return; }
    document.querySelectorAll("button[data-copy]").forEach(function (button) {
      button.hidden = false;
      button.addEventListener("click", function () { copy(button, status); });
    });
  });
})();
