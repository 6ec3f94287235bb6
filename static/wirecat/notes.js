// The note editor, a little smoother; it works without this file (the form posts and saves,
// "Preview" posts and shows the preview, a stale save gets the conflict page).
//  - Autosave: a few seconds after the last keystroke the note is saved in the background,
//    naming the revision it was made from; the answer is the new revision, kept in the
//    form. A save another tab made first answers 409: the form is then posted as it is,
//    and the conflict page shows both texts.
//  - `[[` suggestions: typing [[ and a few letters lists the people, notes, tasks, chats
//    and meetings of that name under the caret; ↑/↓ move, Enter or Tab picks, Escape closes.
//  - Ctrl+S (⌘S) saves.
(function () {
  "use strict";
  document.documentElement.classList.add("nt-js");
  var form = document.getElementById("note-editor");
  if (!form) return;
  var body = document.getElementById("n-body");
  var title = document.getElementById("n-title");
  var revision = document.getElementById("n-revision");
  var link = document.getElementById("n-link");
  var status = document.getElementById("n-status");
  var list = document.getElementById("n-suggest");

  // --- autosave -------------------------------------------------------------------------
  var QUIET_MS = 2000;
  var RETRY_MS = 5000;
  var timer = null;
  var inFlight = null;
  var saved = snapshot();
  var leaving = false;

  function snapshot() {
    return ["n-title", "n-folder", "n-aliases", "n-body"].map(function (id) {
      var el = document.getElementById(id);
      return el ? el.value : "";
    }).join("\u0000");
  }

  function dirty() {
    return snapshot() !== saved;
  }

  function say(text, kind) {
    status.textContent = text;
    status.classList.toggle("nt-status-bad", kind === "bad");
    status.classList.toggle("nt-status-ok", kind === "ok");
  }

  function later(ms) {
    window.clearTimeout(timer);
    timer = window.setTimeout(save, ms);
  }

  function save() {
    timer = null;
    if (inFlight || !dirty()) return inFlight || Promise.resolve();
    if (form.dataset.new === "1" && !title.value.trim()) {
      say("Give the note a title and it saves by itself.");
      return Promise.resolve();
    }
    var sent = snapshot();
    var data = new FormData(form);
    data.delete("action");
    say("Saving…");
    inFlight = fetch(form.dataset.autosave, {
      method: "POST",
      body: data,
      credentials: "same-origin",
      headers: {"X-Autosave": "1", "Accept": "application/json"}
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (answer) {
        inFlight = null;
        if (response.ok) {
          saved = sent;
          revision.value = String(answer.revision);
          if (form.dataset.new === "1") {
            // The note exists now: later saves edit it.
            form.dataset.new = "0";
            form.action = answer.edit_url;
            form.dataset.autosave = answer.edit_url;
            if (link) link.value = "";
            window.history.replaceState(null, "", answer.edit_url);
          }
          say("Saved · revision " + answer.revision + " · " + answer.saved_at, "ok");
          if (dirty()) later(QUIET_MS);
        } else if (response.status === 409) {
          // Another tab saved first: post the form as it is; the page shows both texts.
          say("This note was saved elsewhere meanwhile: showing both texts…", "bad");
          leaving = true;
          form.submit();
        } else {
          say("Not saved: " + (answer.error || "the server said " + response.status) + ".", "bad");
        }
      });
    }).catch(function () {
      inFlight = null;
      say("Not saved: the server cannot be reached. Trying again…", "bad");
      later(RETRY_MS);
    });
    return inFlight;
  }

  form.addEventListener("input", function (event) {
    if (event.target === revision) return;
    say("Unsaved changes");
    later(QUIET_MS);
  });

  // A plain save while an autosave is on its way waits for it (its revision is the one
  // this save edits), then posts.
  form.addEventListener("submit", function (event) {
    window.clearTimeout(timer);
    if (inFlight) {
      event.preventDefault();
      var submitter = event.submitter;
      inFlight.then(function () {
        leaving = true;
        if (form.requestSubmit) form.requestSubmit(submitter || undefined);
        else form.submit();
      });
      return;
    }
    leaving = true;
  });

  // Ctrl+S / ⌘S saves as the Save button does, instead of saving the page to disk.
  document.addEventListener("keydown", function (event) {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === "s") {
      event.preventDefault();
      var button = document.getElementById("n-save");
      if (form.requestSubmit) form.requestSubmit(button);
      else button.click();
    }
  });

  window.addEventListener("beforeunload", function (event) {
    if (leaving || (!dirty() && !inFlight)) return;
    event.preventDefault();
    event.returnValue = "";
  });

  // --- [[ suggestions ---------------------------------------------------------------------
  var OPEN = /\[\[([^\[\]\n|#]{1,60})$/;
  var items = [];
  var active = -1;
  var asked = null;
  var askTimer = null;
  var KINDS = {person: "Person", note: "Note", chat: "Chat", task: "Task", meeting: "Meeting", message: "Message"};

  function typed() {
    if (body.selectionStart !== body.selectionEnd) return null;
    var found = OPEN.exec(body.value.slice(0, body.selectionStart));
    return found ? found[1] : null;
  }

  function close() {
    list.hidden = true;
    list.textContent = "";
    items = [];
    active = -1;
    body.setAttribute("aria-expanded", "false");
    body.removeAttribute("aria-activedescendant");
  }

  function mark(index) {
    active = index;
    Array.prototype.forEach.call(list.children, function (option, at) {
      option.setAttribute("aria-selected", at === index ? "true" : "false");
      if (at === index) {
        body.setAttribute("aria-activedescendant", option.id);
        // Within the list only: the page stays where it is.
        if (option.offsetTop < list.scrollTop) list.scrollTop = option.offsetTop;
        else if (option.offsetTop + option.offsetHeight > list.scrollTop + list.clientHeight) {
          list.scrollTop = option.offsetTop + option.offsetHeight - list.clientHeight;
        }
      }
    });
  }

  // Where the caret is, inside the writing box: a hidden copy of the textarea holds the
  // text up to the caret, and a marker after it.
  function caret() {
    var style = window.getComputedStyle(body);
    var copy = document.createElement("div");
    ["boxSizing", "width", "paddingTop", "paddingRight", "paddingBottom", "paddingLeft",
     "borderTopWidth", "borderRightWidth", "borderBottomWidth", "borderLeftWidth",
     "fontFamily", "fontSize", "fontWeight", "lineHeight", "letterSpacing", "tabSize",
     "wordSpacing", "textIndent"].forEach(function (name) { copy.style[name] = style[name]; });
    copy.style.position = "absolute";
    copy.style.visibility = "hidden";
    copy.style.whiteSpace = "pre-wrap";
    copy.style.overflowWrap = "break-word";
    copy.style.top = "0";
    copy.style.left = "0";
    copy.textContent = body.value.slice(0, body.selectionStart);
    var marker = document.createElement("span");
    marker.textContent = "\u200b";
    copy.appendChild(marker);
    body.parentNode.appendChild(copy);
    var at = {
      top: marker.offsetTop - body.scrollTop + body.offsetTop,
      left: marker.offsetLeft + body.offsetLeft,
      line: parseFloat(style.lineHeight) || 24
    };
    copy.remove();
    return at;
  }

  function place() {
    var at = caret();
    var room = body.parentNode.clientWidth;
    var width = Math.min(list.offsetWidth || 320, room);
    list.style.left = Math.max(0, Math.min(at.left, room - width)) + "px";
    list.style.top = (at.top + at.line + 4) + "px";
  }

  function show(found) {
    items = found;
    list.textContent = "";
    if (!items.length) {
      var none = document.createElement("li");
      none.className = "nt-suggest-none";
      none.setAttribute("role", "option");
      none.setAttribute("aria-disabled", "true");
      none.id = "n-suggest-none";
      none.textContent = "Nothing of that name yet: the link waits for it.";
      list.appendChild(none);
    }
    items.forEach(function (item, index) {
      var option = document.createElement("li");
      option.id = "n-suggest-" + index;
      option.setAttribute("role", "option");
      option.className = "nt-suggest-item";
      var kind = document.createElement("span");
      kind.className = "nt-suggest-kind nt-kind-" + item.kind;
      kind.textContent = KINDS[item.kind] || item.kind;
      var label = document.createElement("span");
      label.className = "nt-suggest-label";
      label.textContent = item.label;
      var detail = document.createElement("span");
      detail.className = "nt-suggest-detail";
      detail.textContent = item.detail;
      option.appendChild(kind);
      option.appendChild(label);
      option.appendChild(detail);
      option.addEventListener("mousedown", function (event) {
        event.preventDefault();  // the textarea keeps the focus
        pick(index);
      });
      list.appendChild(option);
    });
    list.hidden = false;
    body.setAttribute("aria-expanded", "true");
    place();
    mark(items.length ? 0 : -1);
  }

  function ask() {
    var q = typed();
    if (q === null || !q.trim()) {
      close();
      return;
    }
    if (asked) asked.abort();
    asked = new AbortController();
    fetch(form.dataset.suggest + "?q=" + encodeURIComponent(q), {
      credentials: "same-origin",
      signal: asked.signal,
      headers: {"Accept": "application/json"}
    }).then(function (response) {
      return response.ok ? response.json() : {items: []};
    }).then(function (answer) {
      if (typed() === q) show(answer.items || []);
    }).catch(function () { /* a newer question replaced it */ });
  }

  function pick(index) {
    var item = items[index];
    if (!item) return;
    var end = body.selectionStart;
    var start = body.value.lastIndexOf("[[", end);
    var through = body.value.slice(end, end + 2) === "]]" ? end + 2 : end;
    body.focus();
    body.setRangeText("[[" + item.insert + "]]", start, through, "end");
    close();
    body.dispatchEvent(new Event("input", {bubbles: true}));
  }

  body.addEventListener("input", function () {
    window.clearTimeout(askTimer);
    if (typed() === null) {
      close();
      return;
    }
    askTimer = window.setTimeout(ask, 120);
  });

  body.addEventListener("keydown", function (event) {
    if (list.hidden) return;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      if (!items.length) return;
      event.preventDefault();
      var step = event.key === "ArrowDown" ? 1 : -1;
      mark((active + step + items.length) % items.length);
    } else if ((event.key === "Enter" || event.key === "Tab") && active >= 0) {
      event.preventDefault();
      pick(active);
    } else if (event.key === "Escape") {
      event.preventDefault();
      close();
    }
  });

  body.addEventListener("blur", close);
  body.addEventListener("click", function () {
    if (typed() === null) close();
  });
  body.addEventListener("scroll", function () {
    if (!list.hidden) place();
  });
})();
