// LTI platform storage (IMS "LTI Client Side postMessages" and "Platform Storage"): where the
// LMS's frame keeps no cookie, the sign-in's state and nonce are kept by the LMS's own
// window instead. The login page puts them (lti.put_data) and then goes to the LMS's
// authorization URL; the launch page reads them back (lti.get_data) and posts the launch
// again with them. The data come from the page's data- attributes (no inline script).
//
// The LMS's storage frame may still be loading when this page asks (its first document is
// about:blank, which drops the message): a request is sent again every RESEND_MS, with the
// same message_id, until the answer comes or TIMEOUT_MS have passed (then the fallback).
(function () {
  "use strict";
  var TIMEOUT_MS = 10000;
  var RESEND_MS = 250;
  var page = document.getElementById("lti-storage");
  if (!page) {
    return;
  }
  var data = page.dataset;

  function platformFrame() {
    if (data.target === "_parent") {
      return window.parent;
    }
    return window.parent.frames[data.target];
  }

  function send(subject, fields) {
    return new Promise(function (resolve, reject) {
      var frame;
      try {
        frame = platformFrame();
      } catch (error) {
        frame = null;
      }
      if (!frame || frame === window) {
        reject(new Error("no platform storage frame"));
        return;
      }
      var messageId = subject + "-" + Math.random().toString(36).slice(2);
      var message = Object.assign({ subject: subject, message_id: messageId }, fields);
      function post() {
        frame.postMessage(message, data.origin);
      }
      var resend = window.setInterval(post, RESEND_MS);
      var timer = window.setTimeout(function () {
        stop();
        reject(new Error("the platform's storage did not answer"));
      }, TIMEOUT_MS);
      function stop() {
        window.clearInterval(resend);
        window.clearTimeout(timer);
        window.removeEventListener("message", listen);
      }
      function listen(event) {
        var answer = event.data;
        if (
          event.origin !== data.origin ||
          !answer ||
          answer.subject !== subject + ".response" ||
          answer.message_id !== messageId
        ) {
          return;
        }
        stop();
        if (answer.error) {
          reject(new Error(answer.error.message || answer.error.code));
        } else {
          resolve(answer);
        }
      }
      window.addEventListener("message", listen);
      post();
    });
  }

  function showFallback() {
    var fallback = document.getElementById("lti-storage-fallback");
    if (fallback) {
      fallback.hidden = false;
    }
  }

  function put() {
    send("lti.put_data", { key: data.stateKey, value: data.state })
      .then(function () {
        return send("lti.put_data", { key: data.nonceKey, value: data.nonce });
      })
      .then(function () {
        window.location.replace(data.next);
      })
      .catch(showFallback);
  }

  function get() {
    var form = document.getElementById("lti-storage-form");
    var values = {};
    send("lti.get_data", { key: data.stateKey })
      .then(function (answer) {
        values.state = answer.value || "";
        return send("lti.get_data", { key: data.nonceKey });
      })
      .then(function (answer) {
        values.nonce = answer.value || "";
      })
      .catch(function () {
        values.state = values.state || "";
        values.nonce = values.nonce || "";
      })
      .then(function () {
        form.elements.platform_state.value = values.state;
        form.elements.platform_nonce.value = values.nonce;
        form.submit();
      });
  }

  if (data.mode === "put") {
    put();
  } else if (data.mode === "get") {
    get();
  }
})();
