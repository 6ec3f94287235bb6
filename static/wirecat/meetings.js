/* The meeting page's recording. A line's time (a.seg-play) plays the page's player from
   that second, and while the recording plays the line being said is marked. Without
   JavaScript the time is a plain link to the recording with a media fragment (#t=seconds). */
(function () {
  "use strict";

  var THROTTLE_MS = 250;

  function linesOf(player) {
    var all = document.querySelectorAll("a.seg-play[data-player]");
    var lines = [];
    for (var i = 0; i < all.length; i++) {
      var at = parseFloat(all[i].getAttribute("data-t"));
      if (all[i].getAttribute("data-player") === player.id && !isNaN(at)) {
        lines.push({ at: at, row: all[i].closest(".seg") || all[i] });
      }
    }
    lines.sort(function (a, b) { return a.at - b.at; });
    return lines;
  }

  /* The last line starting at or before `time` (binary search), or null. */
  function lineAt(lines, time) {
    var low = 0, high = lines.length - 1, found = null;
    while (low <= high) {
      var mid = (low + high) >> 1;
      if (lines[mid].at <= time + 0.05) { found = lines[mid]; low = mid + 1; } else { high = mid - 1; }
    }
    return found;
  }

  function follow(player) {
    var lines = linesOf(player);
    var current = null;
    var pending = null;

    function mark() {
      pending = null;
      var line = lineAt(lines, player.currentTime);
      if (line === current) return;
      if (current) { current.row.classList.remove("seg-now"); current.row.removeAttribute("aria-current"); }
      current = line;
      if (current) { current.row.classList.add("seg-now"); current.row.setAttribute("aria-current", "true"); }
    }

    function soon() {
      if (pending === null) pending = window.setTimeout(mark, THROTTLE_MS);
    }

    player.addEventListener("timeupdate", soon);
    player.addEventListener("seeked", mark);
    player.addEventListener("ended", mark);
    return mark;
  }

  var players = {};
  var media = document.querySelectorAll(".rec-media[id]");
  for (var i = 0; i < media.length; i++) players[media[i].id] = { el: media[i], mark: follow(media[i]) };

  document.addEventListener("click", function (event) {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    var link = event.target.closest ? event.target.closest("a.seg-play[data-player]") : null;
    if (!link) return;
    var player = players[link.getAttribute("data-player")];
    var at = parseFloat(link.getAttribute("data-t"));
    if (!player || isNaN(at)) return;
    event.preventDefault();
    player.el.currentTime = at;
    var playing = player.el.play();
    if (playing && playing.catch) playing.catch(function () { /* the owner presses play */ });
    player.mark();
  });
})();
