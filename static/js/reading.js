// Reading a conversation: the `m` key switches every markdown value between rendered and raw
// text (all rendered, or all raw). Loaded as a static file (the CSP forbids inline script);
// without it each value's own toggle (a checkbox label) still switches it.
(function () {
  "use strict";

  function typing(target) {
    if (!target) return false;
    var tag = target.tagName;
    if (tag === "INPUT") return target.type !== "checkbox" && target.type !== "radio";
    return tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
  }

  document.addEventListener("keydown", function (event) {
    if (event.key !== "m" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    var switches = document.querySelectorAll("input[data-raw-switch]");
    if (!switches.length) return;
    var showRaw = Array.prototype.some.call(switches, function (box) { return !box.checked; });
    Array.prototype.forEach.call(switches, function (box) { box.checked = showRaw; });
    event.preventDefault();
  });
})();
