// The Agents, Webhooks and Sends pages' enhancements; each page works without this file.
(function () {
  "use strict";

  // A token or secret shown once: <input id="x" readonly data-autoselect> is focused and
  // selected as the page opens (without this file it is selected when clicked into), and
  // <button data-copy="x" hidden> is shown and copies it. The result is said in the
  // section's [role=status] line.
  function say(from, text) {
    var section = from.closest("section") || document;
    var line = section.querySelector(".copy-said");
    if (line) line.textContent = text;
  }

  function copyFallback(input) {
    input.focus();
    input.select();
    try {
      return document.execCommand("copy");
    } catch (error) {
      return false;
    }
  }

  function copy(button) {
    var input = document.getElementById(button.dataset.copy);
    if (!input) return;
    var done = function () {
      button.textContent = "Copied";
      say(button, "Copied to the clipboard.");
    };
    var failed = function () {
      input.focus();
      input.select();
      say(button, "Could not copy here: the token is selected, press Ctrl+C (⌘C on a Mac).");
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(input.value).then(done, function () {
        if (copyFallback(input)) done(); else failed();
      });
    } else if (copyFallback(input)) {
      done();
    } else {
      failed();
    }
  }

  Array.prototype.forEach.call(document.querySelectorAll("button[data-copy]"), function (button) {
    button.hidden = false;
    button.addEventListener("click", function () { copy(button); });
  });

  var shown = document.querySelector("input[data-autoselect]");
  if (shown) {
    shown.focus({preventScroll: false});
    shown.select();
  }

  // Sends: after Approve or Refuse, htmx swaps in the list as it now stands; the line
  // saying what happened takes the focus, so a keyboard or screen-reader user hears it
  // and goes on from there.
  document.body.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail && event.detail.target;
    var root = target && target.isConnected ? target : document.getElementById("sends-live");
    var notice = root && root.querySelector ? root.querySelector(".send-notice") : null;
    if (notice) notice.focus();
  });
})();
