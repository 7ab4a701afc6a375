// The conversation page's verdict dock (#verdict-dock, a <details>): a sticky side panel on
// wide screens, a sticky bottom panel on narrow ones (static/css/review.css). Folding only
// hides the form, so nothing typed is lost. This script (loaded from base.html; the CSP
// forbids inline script) unfolds it when a verdict key is pressed, so the keys of
// static/js/review.js reach the form, and on narrow screens keeps the reviewer's choice to
// fold it from one conversation to the next, unless the form holds anything to read or fix.
(function () {
  "use strict";

  var dock = document.getElementById("verdict-dock");
  if (!dock || dock.tagName !== "DETAILS") return;
  var KEY = "redteam.verdict-dock";
  var narrow = window.matchMedia ? window.matchMedia("(max-width: 1099.98px)") : null;

  function remembered() {
    try { return window.sessionStorage.getItem(KEY); } catch (e) { return null; }
  }

  function remember(value) {
    try { window.sessionStorage.setItem(KEY, value); } catch (e) { /* storage off */ }
  }

  function holdsSomething() {
    if (dock.querySelector(".errorlist, [aria-invalid=true], .messages")) return true;
    return Array.prototype.some.call(
      dock.querySelectorAll("textarea, input[type=text], input[type=number]"),
      function (field) { return field.value !== ""; }
    ) || !!dock.querySelector("input[type=radio]:checked");
  }

  if (narrow && narrow.matches && remembered() === "folded" && !holdsSomething()) {
    dock.open = false;
  }

  dock.addEventListener("toggle", function () {
    if (narrow && narrow.matches) remember(dock.open ? "open" : "folded");
  });

  function typing(target) {
    if (!target) return false;
    var tag = target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
  }

  // Capture phase: the dock is open before review.js handles the same key.
  document.addEventListener("keydown", function (event) {
    if (dock.open || typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
    if (/^[tfr0-9]$/.test(event.key)) dock.open = true;
  }, true);
})();
