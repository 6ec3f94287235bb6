// The Conversations pages: the sticky header's height for scroll margins (as chat.js keeps
// it on the chat page), and a message opened in its conversation brought to the middle of
// the window. Without this file the folds, links and pages work as they are.
(function () {
  "use strict";
  var head = document.querySelector(".chat-head");
  var root = document.documentElement;
  function setHeadVar() {
    if (head) root.style.setProperty("--chat-head", Math.round(head.getBoundingClientRect().height) + "px");
  }
  setHeadVar();
  if (head && window.ResizeObserver) new ResizeObserver(setHeadVar).observe(head);
  // After the browser's own jump to the #fragment (on load), so this one is the last word:
  // the message in the middle, what came before it in view above.
  var focus = document.querySelector(".conv-messages .msg.focus");
  function centre() {
    focus.scrollIntoView({block: "center"});
    focus.focus({preventScroll: true});
  }
  if (focus) {
    if (document.readyState === "complete") centre();
    else window.addEventListener("load", function () { window.requestAnimationFrame(centre); });
  }
})();
