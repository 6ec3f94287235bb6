// The People pages' bulk forms: a "tick all on this page" box and a count of what is
// ticked. Without this file every box is ticked by hand and the forms work the same.
(function () {
  "use strict";
  Array.prototype.forEach.call(document.querySelectorAll("form.bulk"), function (form) {
    var all = form.querySelector("[data-pick-all]");
    var count = form.querySelector("[data-bulk-count]");
    var first = count ? count.textContent : "";
    function boxes() {
      return Array.prototype.slice.call(form.querySelectorAll("input[data-pick]"));
    }
    function update() {
      var ticked = boxes().filter(function (box) { return box.checked; }).length;
      if (count) count.textContent = ticked ? ticked + " ticked" : first;
      if (all) {
        all.checked = ticked > 0 && ticked === boxes().length;
        all.indeterminate = ticked > 0 && ticked < boxes().length;
      }
    }
    if (all) {
      all.hidden = false;
      var wrapper = all.closest("[hidden]");
      if (wrapper) wrapper.hidden = false;
      all.addEventListener("change", function () {
        boxes().forEach(function (box) { box.checked = all.checked; });
        update();
      });
    }
    form.addEventListener("change", function (event) {
      if (event.target.matches && event.target.matches("input[data-pick]")) update();
    });
    update();
  });
})();
