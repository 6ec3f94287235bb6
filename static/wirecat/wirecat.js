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

  // Drop-down menus (<details data-menu>, the main menu's "More"): a <details> opens and
  // closes without this; here Escape closes it (focus back on its summary) and so does a
  // click or focus anywhere outside it.
  function closeMenus(except) {
    Array.prototype.forEach.call(document.querySelectorAll("details[data-menu][open]"), function (menu) {
      if (!except || !menu.contains(except)) menu.removeAttribute("open");
    });
  }
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    var menu = event.target.closest ? event.target.closest("details[data-menu][open]") : null;
    if (menu) {
      menu.removeAttribute("open");
      menu.querySelector("summary").focus();
    } else {
      closeMenus(null);
    }
  });
  document.addEventListener("click", function (event) { closeMenus(event.target); });
  document.addEventListener("focusin", function (event) { closeMenus(event.target); });

  // Forms that ask first (deleting a tag): <form data-confirm="…">.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  }, true);

  // The Content-Security-Policy lets no inline handler or style attribute run, so what
  // pages used them for is done here, from data attributes:
  //   <select data-autosubmit>        sends its form when changed (the board's project);
  //   <input data-select-on-focus>    selects its text when focused (a new agent's token);
  //   data-tag="#rrggbb"              a tag's colour (the --tag custom property);
  //   data-width="42"                 a progress bar's width, in percent.
  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target.matches && target.matches("select[data-autosubmit]") && target.form) {
      target.form.submit();
    }
  });
  document.addEventListener("focusin", function (event) {
    var target = event.target;
    if (target.matches && target.matches("input[data-select-on-focus]")) target.select();
  });
  var COLOUR = /^#[0-9a-fA-F]{6}$/;
  function paint(root) {
    if (!root || !root.querySelectorAll) return;
    var tagged = Array.prototype.slice.call(root.querySelectorAll("[data-tag]"));
    var sized = Array.prototype.slice.call(root.querySelectorAll("[data-width]"));
    if (root.matches && root.matches("[data-tag]")) tagged.push(root);
    if (root.matches && root.matches("[data-width]")) sized.push(root);
    tagged.forEach(function (el) {
      if (COLOUR.test(el.dataset.tag)) el.style.setProperty("--tag", el.dataset.tag);
    });
    sized.forEach(function (el) {
      var width = Math.max(0, Math.min(100, parseFloat(el.dataset.width) || 0));
      el.style.width = width + "%";
    });
  }
  paint(document);
  // Content htmx swaps in: a MutationObserver's callback runs before the next paint, so a
  // progress bar never shows at 0 % for a frame.
  new MutationObserver(function (records) {
    records.forEach(function (record) {
      Array.prototype.forEach.call(record.addedNodes, paint);
    });
  }).observe(document.body, {childList: true, subtree: true});

  // A thumbnail the worker has not made yet comes as a one-pixel placeholder: ask again a
  // few times, a little later each time.
  function thumbLater(img) {
    if (!img.matches || !img.matches("a.thumb img") || !img.complete) return;
    if (img.naturalWidth !== 1 || img.naturalHeight !== 1) return;
    var tries = Number(img.dataset.tries || 0);
    if (tries >= 6) return;
    img.dataset.tries = String(tries + 1);
    window.setTimeout(function () {
      img.src = img.src.split("?")[0] + "?try=" + (tries + 1);
    }, 1000 * (tries + 1));
  }
  document.addEventListener("load", function (event) { thumbLater(event.target); }, true);
  Array.prototype.forEach.call(document.querySelectorAll("a.thumb img"), thumbLater);

  // A strip of tabs wider than the screen (the search's, on a phone) scrolls sideways:
  // the current tab is brought into view, when the page loads and when htmx redraws it.
  function currentTabShown(root) {
    var strips = (root || document).querySelectorAll(".search-tabs");
    Array.prototype.forEach.call(strips, function (strip) {
      var current = strip.querySelector('[aria-current="page"]');
      if (current && strip.scrollWidth > strip.clientWidth) {
        var from = strip.getBoundingClientRect().left;
        var at = current.getBoundingClientRect().left - from;
        strip.scrollLeft += at - (strip.clientWidth - current.offsetWidth) / 2;
      }
    });
  }
  currentTabShown(document);
  document.addEventListener("htmx:afterSettle", function (event) {
    currentTabShown(event.target.parentNode || document);
  });

  // The one-time login link, /login/code/#<code>: the code is in the fragment, which the
  // browser never sends. Put it into the page's form and post it; the fragment leaves the
  // address bar and the history.
  var codeForm = document.querySelector("form[data-from-fragment]");
  var fragment = window.location.hash.slice(1);
  if (codeForm && fragment) {
    try {
      codeForm.elements.code.value = decodeURIComponent(fragment);
    } catch (error) {
      codeForm.elements.code.value = fragment;
    }
    window.history.replaceState(null, "", window.location.pathname);
    codeForm.submit();
  }
})();
