// The chat page as a messenger reads: loading older (and newer) pages as the reader
// scrolls, one page per approach, keeping the reader's place; the seams where a loaded
// page meets the one beside it; each message's actions menu by mouse, keyboard and long
// press; reply quotes that jump. Everything here is an enhancement: without this file the
// links, forms and <details> menus of the page work as they are.
(function () {
  "use strict";
  var list = document.querySelector(".chat-page .messages");
  if (!list) return;
  var head = document.querySelector(".chat-head");
  var root = document.documentElement;

  // --- the sticky header's height, for scroll margins and "what is at the top" ----------
  function headHeight() {
    return head ? head.getBoundingClientRect().height : 0;
  }
  // Where the messages start to show: under the header (which sticks at the top once the
  // site's bar has scrolled away).
  function headBottom() {
    return head ? Math.max(0, head.getBoundingClientRect().bottom) : 0;
  }
  function setHeadVar() {
    root.style.setProperty("--chat-head", Math.round(headHeight()) + "px");
  }
  setHeadVar();
  if (head && window.ResizeObserver) new ResizeObserver(setHeadVar).observe(head);

  // --- loading pages as the reader scrolls -----------------------------------------------
  // A page loads when the reader moves towards an edge (wheel, touch, keys, scrollbar) and
  // its "Load older/newer" link is near the viewport: one page per gesture. A gesture ends
  // after a pause, so holding the wheel down at the top loads one page, not a chain, and the
  // place is kept (the message at the top stays where it was). Focus moving (a tag box, a
  // link) scrolls without a gesture and loads nothing.
  var NEAR = 240; // px beyond the viewport's edge that count as "near"
  var PAUSE = 650; // ms without movement that end a gesture
  var gesture = {active: false, dir: 0, loaded: false, timer: 0};
  var busy = false;
  var quietUntil = Date.now() + 400; // the page's own first scroll (to the newest or focused message)
  var lastY = window.scrollY;

  // The state is on the list too (data-gesture="on|off", data-busy): what a reader's
  // browser is doing, readable by a test that waits for it.
  list.dataset.gesture = "off";
  function endGesture() {
    gesture.active = false;
    gesture.loaded = false;
    list.dataset.gesture = "off";
  }
  function intent(dir) {
    if (!dir) return;
    if (!gesture.active || gesture.dir !== dir) gesture.loaded = false;
    gesture.active = true;
    list.dataset.gesture = "on";
    gesture.dir = dir;
    window.clearTimeout(gesture.timer);
    gesture.timer = window.setTimeout(endGesture, PAUSE);
    maybeLoad();
  }
  function edgeLink(dir) {
    var links = list.querySelectorAll(dir < 0 ? "a.more.older" : "a.more.newer");
    return links.length ? links[dir < 0 ? 0 : links.length - 1] : null;
  }
  function near(link, dir) {
    var box = link.getBoundingClientRect();
    if (dir < 0) return box.bottom > headBottom() - NEAR;
    return box.top < window.innerHeight + NEAR;
  }
  function maybeLoad() {
    if (busy || gesture.loaded || !window.htmx) return;
    var link = edgeLink(gesture.dir);
    if (!link || !near(link, gesture.dir)) return;
    gesture.loaded = true;
    link.click(); // htmx's click trigger: the link's own hx-get
  }

  window.addEventListener("wheel", function (event) {
    if (event.ctrlKey) return; // zooming
    intent(event.deltaY < 0 ? -1 : event.deltaY > 0 ? 1 : 0);
  }, {passive: true});
  var touchY = null;
  window.addEventListener("touchstart", function (event) {
    touchY = event.touches.length ? event.touches[0].clientY : null;
  }, {passive: true});
  window.addEventListener("touchmove", function (event) {
    if (touchY === null || !event.touches.length) return;
    var y = event.touches[0].clientY;
    if (Math.abs(y - touchY) > 4) intent(y > touchY ? -1 : 1); // finger down: content up
    touchY = y;
  }, {passive: true});
  var KEYS = {PageUp: -1, ArrowUp: -1, Home: -1, PageDown: 1, ArrowDown: 1, End: 1, " ": 1};
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (!(event.key in KEYS) || event.altKey || event.ctrlKey || event.metaKey) return;
    if (/^(INPUT|TEXTAREA|SELECT|BUTTON|SUMMARY)$/.test(target.tagName) || target.isContentEditable) return;
    if (target.closest && target.closest("details[open]")) return;
    intent(event.key === " " && event.shiftKey ? -1 : KEYS[event.key]);
  });
  document.addEventListener("focusin", function () {
    quietUntil = Date.now() + 200;
  });
  var pointerDown = false;
  window.addEventListener("pointerdown", function () { pointerDown = true; }, true);
  window.addEventListener("pointerup", function () { pointerDown = false; }, true);
  window.addEventListener("pointercancel", function () { pointerDown = false; }, true);
  window.addEventListener("scroll", function () {
    var y = window.scrollY;
    var dir = y < lastY ? -1 : y > lastY ? 1 : 0;
    lastY = y;
    // Movement the reader makes: the scrollbar dragged (a pointer is down), the momentum
    // of a flick or a wheel (a gesture goes on). A scroll that starts otherwise (focus
    // moving, a link to an anchor, a script) is not an approach and loads nothing.
    if (Date.now() >= quietUntil && (gesture.active || pointerDown)) intent(dir);
  }, {passive: true});

  // --- keeping the place, and mending the seams ------------------------------------------
  var pending = null;

  function articles() {
    return list.querySelectorAll("article.msg");
  }
  function topMessage() {
    var limit = headBottom();
    var all = articles();
    for (var i = 0; i < all.length; i++) {
      if (all[i].getBoundingClientRect().bottom > limit + 1) return all[i];
    }
    return null;
  }
  function siblingArticle(node, forward) {
    while (node && !(node.matches && node.matches("article.msg"))) {
      node = forward ? node.nextElementSibling : node.previousElementSibling;
    }
    return node;
  }
  // Where a page meets its neighbour: a day separator the neighbour already shows goes, and
  // a sender's run that goes on across the seam loses its repeated name and avatar.
  function mend(before, after) {
    if (!before || !after) return;
    var node = before.nextElementSibling;
    while (node && node !== after) {
      var next = node.nextElementSibling;
      if (node.classList.contains("day") && node.dataset.day === before.dataset.day) node.remove();
      node = next;
    }
    var sameRun = after.dataset.run === "start" &&
      after.dataset.day === before.dataset.day &&
      after.dataset.sender === before.dataset.sender &&
      !before.classList.contains("service") && !after.classList.contains("service") &&
      Math.abs(Number(after.dataset.ts) - Number(before.dataset.ts)) <= 300;
    if (sameRun) after.dataset.run = "cont";
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    if (event.target.matches && event.target.matches("a.more")) {
      busy = true;
      list.dataset.busy = "1";
    }
  });
  // The link is gone once its page is swapped in (its own events then reach nobody): the
  // swap ends the load; a failed request ends it where the link still is.
  function idle() {
    busy = false;
    delete list.dataset.busy;
  }
  ["htmx:afterRequest", "htmx:sendError", "htmx:responseError", "htmx:timeout"].forEach(function (name) {
    document.addEventListener(name, function (event) {
      if (event.target.matches && event.target.matches("a.more")) idle();
    });
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    var link = event.detail.target;
    if (!link || !link.matches || !link.matches("a.more")) return;
    var older = link.classList.contains("older");
    var anchor = older ? topMessage() : null;
    pending = {
      older: older,
      anchor: anchor,
      top: anchor ? anchor.getBoundingClientRect().top : 0,
      seam: older ? siblingArticle(link.nextElementSibling, true) : siblingArticle(link.previousElementSibling, false),
    };
  });
  document.addEventListener("htmx:afterSwap", function () {
    if (!pending) return;
    var done = pending;
    pending = null;
    idle();
    if (done.older) {
      mend(siblingArticle(done.seam && done.seam.previousElementSibling, false), done.seam);
      if (done.anchor && done.anchor.isConnected) {
        var shift = done.anchor.getBoundingClientRect().top - done.top;
        if (Math.abs(shift) >= 1) {
          quietUntil = Date.now() + 120;
          window.scrollBy(0, shift);
          lastY = window.scrollY;
        }
      }
    } else {
      mend(done.seam, siblingArticle(done.seam && done.seam.nextElementSibling, true));
    }
  });

  // --- the actions menus -----------------------------------------------------------------
  function menus() {
    return document.querySelectorAll(".chat-page details.actions[open], .chat-page details.chat-more[open]");
  }
  function closeMenus(except) {
    Array.prototype.forEach.call(menus(), function (open) {
      if (open !== except) open.open = false;
    });
  }
  function items(details) {
    return Array.prototype.filter.call(details.querySelectorAll(".menu a, .menu button"), function (el) {
      return !el.hidden && el.offsetParent !== null;
    });
  }
  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (!details.matches || !details.matches(".chat-page details.actions, .chat-page details.chat-more")) return;
    if (details.open) {
      closeMenus(details);
    } else {
      var msg = details.closest(".msg");
      if (msg) msg.classList.remove("pressed");
    }
  }, true);
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    var details = target.closest && target.closest(".chat-page details.actions, .chat-page details.chat-more");
    if (event.key === "Escape") {
      var tagging = target.closest && target.closest(".msg.tagging");
      if (tagging && target.matches("input")) {
        tagging.classList.remove("tagging");
        tagging.querySelector("details.actions > summary").focus();
        event.preventDefault();
      } else if (details && details.open) {
        details.open = false;
        details.querySelector("summary").focus();
        event.preventDefault();
      }
      return;
    }
    if (!details) return;
    if (target.matches("summary") && (event.key === "Enter" || event.key === " " || event.key === "ArrowDown") &&
      !details.open) {
      // The keyboard opens it: at once (the toggle event comes later), on its first item.
      event.preventDefault();
      details.open = true;
      closeMenus(details);
      var first = items(details)[0];
      if (first) first.focus();
    } else if (target.matches("summary") && event.key === "ArrowDown") {
      event.preventDefault();
      items(details)[0].focus();
    } else if (details.open && (event.key === "ArrowDown" || event.key === "ArrowUp") && !target.matches("summary")) {
      var all = items(details);
      var at = all.indexOf(target);
      if (at < 0) return;
      event.preventDefault();
      var next = all[(at + (event.key === "ArrowDown" ? 1 : all.length - 1)) % all.length];
      next.focus();
    }
  });
  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!target.closest) return;
    var inside = target.closest("details.actions, details.chat-more");
    if (!inside) closeMenus(null);
    var tagging = document.querySelectorAll(".msg.tagging");
    Array.prototype.forEach.call(tagging, function (msg) {
      if (!msg.contains(target)) msg.classList.remove("tagging");
    });
  });

  function toast(text) {
    var old = document.querySelector(".chat-toast");
    if (old) old.remove();
    var note = document.createElement("div");
    note.className = "chat-toast";
    note.setAttribute("role", "status");
    note.textContent = text;
    document.body.appendChild(note);
    window.setTimeout(function () { note.remove(); }, 2200);
  }
  function copy(text, done) {
    function fallback() {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (error) { ok = false; }
      area.remove();
      toast(ok ? done : "Copying is not allowed here: select the text and copy it.");
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { toast(done); }, fallback);
    } else {
      fallback();
    }
  }

  // "Copy text" needs this script; "Permalink" copies the link here, and opens it without it.
  function enable(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll(".msg .act-copy[hidden]"), function (button) {
      if (button.closest(".msg").querySelector(".content")) button.hidden = false;
    });
    Array.prototype.forEach.call(scope.querySelectorAll(".msg .act-link:not([data-ready])"), function (link) {
      link.dataset.ready = "1";
      link.textContent = "Copy link";
    });
  }
  enable(document);
  document.addEventListener("htmx:afterSettle", function (event) {
    enable(event.target.parentNode || document);
  });

  list.addEventListener("click", function (event) {
    var target = event.target.closest ? event.target.closest("a, button") : null;
    if (!target) return;
    var msg = target.closest(".msg");
    var details = target.closest("details.actions");
    if (details && target.closest(".menu")) {
      if (target.matches(".act-tag")) {
        event.preventDefault();
        msg.classList.add("tagging");
        details.open = false;
        var field = tagField(msg);
        if (field) field.focus();
      } else if (target.matches(".act-copy")) {
        var body = msg.querySelector(".content .body") || msg.querySelector(".content");
        copy(body ? body.innerText.trim() : "", "Text copied");
        details.open = false;
        details.querySelector("summary").focus();
      } else if (target.matches(".act-link")) {
        if (event.ctrlKey || event.metaKey || event.shiftKey || event.button) return;
        event.preventDefault();
        copy(new URL(target.getAttribute("href"), window.location.href).href, "Link copied");
        details.open = false;
        details.querySelector("summary").focus();
      } else {
        details.open = false; // make a task, earlier versions: htmx loads them below
      }
      return;
    }
    if (target.matches("a.quote") && !event.ctrlKey && !event.metaKey && !event.shiftKey) {
      var to = document.getElementById(target.dataset.target || "");
      if (!to) return; // not loaded: the link opens the chat at it
      event.preventDefault();
      jumpTo(to);
    }
  });
  // A message without tags carries no tag form (50 forms made the page slow): the page's
  // one <template> is copied in when the menu asks for it. Without this script, "Add a
  // tag…" opens the page at the message with its own form.
  function tagField(msg) {
    var tags = msg.querySelector(".tags");
    if (!tags) return null;
    var form = tags.querySelector("form.tag-add");
    var template = document.getElementById("tag-form");
    if (!form && template) {
      form = template.content.querySelector("form.tag-add").cloneNode(true);
      form.querySelector("input[name=key]").value = msg.id;
      form.querySelector("input[name=next]").value = window.location.pathname + window.location.search;
      form.setAttribute("hx-target", "#" + tags.id);
      tags.appendChild(form);
      if (window.htmx) window.htmx.process(form);
    }
    return form ? form.querySelector("input[name=name]") : null;
  }
  function jumpTo(msg) {
    quietUntil = Date.now() + 800;
    msg.scrollIntoView({block: "center", behavior: "auto"});
    msg.focus({preventScroll: true});
    msg.classList.remove("flash");
    void msg.offsetWidth; // restart the highlight's animation
    msg.classList.add("flash");
    window.history.replaceState(null, "", "#" + msg.id);
  }
  document.addEventListener("animationend", function (event) {
    if (event.target.closest) {
      var msg = event.target.closest(".msg.flash");
      if (msg) msg.classList.remove("flash");
    }
  });

  // After a tag is added (htmx swaps the tags in place), the box stays ready for another.
  document.addEventListener("htmx:afterSwap", function (event) {
    var tags = event.target;
    if (!tags.matches || !tags.matches(".tags")) return;
    var msg = tags.closest(".msg.tagging");
    if (!msg) return;
    var field = msg.querySelector(".tags .tag-add input[name=name]");
    if (field) field.focus({preventScroll: true});
  });

  // --- a long press opens a message's menu (touch screens have no hover) ------------------
  var press = null;
  list.addEventListener("pointerdown", function (event) {
    if (event.pointerType !== "touch") return;
    var msg = event.target.closest && event.target.closest(".msg");
    if (!msg || event.target.closest("a, button, input, summary, .menu")) return;
    var start = {x: event.clientX, y: event.clientY};
    press = {
      start: start,
      timer: window.setTimeout(function () {
        var details = msg.querySelector("details.actions");
        if (!details) return;
        msg.classList.add("pressed");
        details.open = true;
        press = {opened: msg};
      }, 500),
    };
  });
  function cancelPress(event) {
    if (!press || !press.timer) return;
    if (event.type === "pointermove" &&
      Math.abs(event.clientX - press.start.x) < 10 && Math.abs(event.clientY - press.start.y) < 10) return;
    window.clearTimeout(press.timer);
    press = null;
  }
  list.addEventListener("pointermove", cancelPress);
  list.addEventListener("pointerup", cancelPress);
  list.addEventListener("pointercancel", cancelPress);
  list.addEventListener("contextmenu", function (event) {
    if (press && press.opened) {
      event.preventDefault(); // the long press opened our menu, not the browser's
      press = null;
    }
  });
})();
