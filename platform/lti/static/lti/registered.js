// Dynamic Registration's last step: tell the LMS's dialog (our parent frame or opener) to
// close. The LMS checks the message's origin itself; the message carries nothing secret.
(function () {
  "use strict";
  function close() {
    var target = window.opener || (window.parent !== window ? window.parent : null);
    if (target) {
      target.postMessage({ subject: "org.imsglobal.lti.close" }, "*");
    }
  }
  var button = document.getElementById("lti-close");
  if (button) {
    button.addEventListener("click", close);
    if (button.dataset.closeOnLoad === "true") {
      close();
    }
  }
})();
