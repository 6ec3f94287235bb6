// Small progressive enhancements; every page works without this file.
(function () {
  "use strict";
  function focusMessage() {
    var id = window.location.hash.slice(1) ||
      (document.querySelector(".messages") || {dataset: {}}).dataset.focus;
    if (!id) return;
    var el = document.getElementById(id);
    if (!el) return;
    el.scrollIntoView({block: "center"});
    el.focus({preventScroll: true});
  }
  document.addEventListener("DOMContentLoaded", focusMessage);
})();
