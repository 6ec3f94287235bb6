// Small progressive enhancements; every page works without this file.
(function () {
  "use strict";
  // A chat opens at its focused message, else at its newest one (the bottom), like a
  // messenger. This runs as the deferred script executes, before htmx wires its
  // "intersect" triggers, so "Load older messages" loads only once the reader scrolls up.
  function focusMessage() {
    var list = document.querySelector(".messages");
    var id = window.location.hash.slice(1) || (list ? list.dataset.focus : "");
    var el = id ? document.getElementById(id) : null;
    if (el) {
      el.scrollIntoView({block: "center"});
      el.focus({preventScroll: true});
    } else if (list && list.querySelector("article.msg")) {
      var all = list.querySelectorAll("article.msg");
      all[all.length - 1].scrollIntoView({block: "end"});
    }
  }
  focusMessage();

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
