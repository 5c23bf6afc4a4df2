/* TeX in statements ($...$ inline, $$...$$ display) rendered by KaTeX, served locally.
 * Without JavaScript the TeX source stays readable as it is. Code blocks are left alone. */
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    if (typeof window.renderMathInElement !== "function") { return; }
    document.querySelectorAll(".statement").forEach(function (element) {
      window.renderMathInElement(element, {
        delimiters: [
          { left: "$$", right: "$$", display: true },
          { left: "$", right: "$", display: false }
        ],
        throwOnError: false
      });
    });
  });
})();
