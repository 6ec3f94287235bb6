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

  // Search: ↓ from the box goes to the first hit, ↑/↓ move between hits, ↑ from the first
  // goes back to the box, "/" anywhere on the page returns to the box. Enter opens a hit.
  function hitLinks() {
    return Array.prototype.slice.call(document.querySelectorAll("#results a.hit-link"));
  }
  document.addEventListener("keydown", function (event) {
    var box = document.getElementById("q");
    if (!box || event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target;
    if (event.key === "/" && target !== box && !/^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) {
      event.preventDefault();
      box.focus();
      box.select();
      return;
    }
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    var links = hitLinks();
    if (!links.length) return;
    var at = links.indexOf(target);
    if (target === box && event.key === "ArrowDown") {
      event.preventDefault();
      links[0].focus();
    } else if (at >= 0) {
      event.preventDefault();
      if (event.key === "ArrowDown" && at + 1 < links.length) links[at + 1].focus();
      else if (event.key === "ArrowUp") (at === 0 ? box : links[at - 1]).focus();
    }
  });

  // Forms that ask first (deleting a tag): <form data-confirm="…">.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  }, true);
})();
