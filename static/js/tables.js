// Every width: loaded on every page from base.html (the CSP forbids inline script).
// 1. Tables (table.rows) reflow into stacked rows below 1000 px (static/css/review.css), and
//    wider when their columns do not fit their box (.is-stacked, set here); each body cell
//    gets its column's header text as data-label, which the stacked layout shows in front of
//    the value. Without this script the stacked rows still read, unlabelled.
// 2. A chip, badge or id cut with an ellipsis shows its whole text: as a tooltip (a title,
//    unless the template gave one) when pointed at or focused, and in full when clicked (a
//    plain chip or badge; a link chip keeps its link and its tooltip).
(function () {
  "use strict";

  function headerNames(table) {
    var head = table.tHead;
    if (!head || !head.rows.length) return [];
    var names = [];
    Array.prototype.forEach.call(head.rows[0].cells, function (cell) {
      var text = (cell.textContent || "").replace(/\s+/g, " ").trim();
      for (var i = 0; i < (cell.colSpan || 1); i++) names.push(text);
    });
    return names;
  }

  function label(table) {
    var names = headerNames(table);
    if (!names.length) return;
    Array.prototype.forEach.call(table.tBodies, function (body) {
      Array.prototype.forEach.call(body.rows, function (row) {
        var column = 0;
        Array.prototype.forEach.call(row.cells, function (cell) {
          var name = names[column];
          if (name && !cell.hasAttribute("data-label")) cell.setAttribute("data-label", name);
          column += cell.colSpan || 1;
        });
      });
    });
  }

  var tables = Array.prototype.slice.call(document.querySelectorAll("table.rows"));
  tables.forEach(label);

  // Words stay whole in the cells (static/css/review.css) only while the script can stack a
  // table whose columns then do not fit: a long class name, many long chips.
  document.documentElement.classList.add("tables-fit");

  function contentRight(element) {
    var style = window.getComputedStyle(element);
    return element.getBoundingClientRect().right -
      parseFloat(style.paddingRight || "0") - parseFloat(style.borderRightWidth || "0");
  }

  function fit() {
    tables.forEach(function (table) { table.classList.remove("is-stacked"); });
    tables.forEach(function (table) {
      var box = table.parentElement;
      if (box && table.getBoundingClientRect().right > contentRight(box) + 1) {
        table.classList.add("is-stacked");
      }
    });
  }

  if (tables.length) {
    fit();
    var pending = false;
    window.addEventListener("resize", function () {
      if (pending) return;
      pending = true;
      window.requestAnimationFrame(function () { pending = false; fit(); });
    });
    // A table inside a folded <details> is measured again when it is unfolded.
    document.addEventListener("toggle", function (event) {
      var target = event.target;
      if (target instanceof Element && target.querySelector("table.rows")) fit();
    }, true);
  }

  var CUT = ".chip, .badge, .mono, .who";

  function isCut(element) {
    return element.scrollWidth > element.clientWidth + 1;
  }

  function explain(event) {
    var target = event.target;
    if (!(target instanceof Element)) return;
    var element = target.closest(CUT);
    if (!element || element.hasAttribute("title") || !isCut(element)) return;
    element.setAttribute("title", (element.textContent || "").replace(/\s+/g, " ").trim());
  }

  document.addEventListener("mouseover", explain);
  document.addEventListener("focusin", explain);
  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!(target instanceof Element) || target.closest("a, button, label, summary")) return;
    var element = target.closest(".chip, .badge");
    if (!element) return;
    if (element.classList.contains("is-whole")) element.classList.remove("is-whole");
    else if (isCut(element)) element.classList.add("is-whole");
  });
})();
