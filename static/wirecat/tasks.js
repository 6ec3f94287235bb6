// The board, a little smoother; it works without this file.
//  - Moving a card swaps the whole board in (htmx). Below 900 px the columns are a strip
//    that scrolls sideways: keep it where the reader had it, so they stay in the column
//    they were working in and watch the card leave it (the note above says where it went).
//  - Mark the tab of the column in view (aria-current), as the strip scrolls; a tab
//    scrolls the strip sideways to its column.
(function () {
  "use strict";
  var kept = null;

  function strip() {
    return document.querySelector("#board [data-board]");
  }

  function markTab() {
    var board = strip();
    if (!board) return;
    var cols = board.querySelectorAll(".board-col");
    var left = board.getBoundingClientRect().left;
    var best = null;
    var bestDistance = Infinity;
    Array.prototype.forEach.call(cols, function (col) {
      var distance = Math.abs(col.getBoundingClientRect().left - left);
      if (distance < bestDistance) {
        bestDistance = distance;
        best = col;
      }
    });
    Array.prototype.forEach.call(document.querySelectorAll("#board .board-tabs a"), function (tab) {
      if (best && tab.dataset.col === best.dataset.status) tab.setAttribute("aria-current", "true");
      else tab.removeAttribute("aria-current");
    });
  }

  function watch() {
    var board = strip();
    if (!board || board.dataset.watched) return;
    board.dataset.watched = "1";
    var pending = false;
    board.addEventListener("scroll", function () {
      if (pending) return;
      pending = true;
      window.requestAnimationFrame(function () {
        pending = false;
        markTab();
      });
    }, {passive: true});
    markTab();
  }

  // A tab scrolls the strip to its column (sideways only: the tabs stay in view) and puts
  // focus there; without this file the link jumps to the column all the same.
  document.addEventListener("click", function (event) {
    var tab = event.target.closest ? event.target.closest("#board .board-tabs a") : null;
    var board = strip();
    if (!tab || !board) return;
    var col = document.getElementById("col-" + tab.dataset.col);
    if (!col || board.scrollWidth <= board.clientWidth) return;
    event.preventDefault();
    var still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    var left = board.scrollLeft + col.getBoundingClientRect().left - board.getBoundingClientRect().left;
    board.scrollTo({left: left, behavior: still ? "auto" : "smooth"});
    col.focus({preventScroll: true});
  });

  document.addEventListener("htmx:beforeSwap", function (event) {
    var board = strip();
    if (board && event.detail.target && event.detail.target.id === "board") {
      kept = board.scrollLeft;
    }
  });
  // afterSwap fires on the new content, before the browser paints it: no jump to be seen.
  document.addEventListener("htmx:afterSwap", function () {
    var board = strip();
    if (board && kept !== null) {
      board.scrollLeft = kept;
      kept = null;
    }
    watch();
  });
  watch();
})();
