// Keyboard shortcuts for reviewers. Loaded as a static file (the CSP forbids inline script);
// every page works without it.
//   Queue list:       j / k move the selection, Enter opens it, n starts the queue.
//   Conversation:     t / f pick true / false, 1..9 pick a category, r focuses the rationale,
//                     Ctrl+Enter (or Cmd+Enter) records (and, from a queue, moves on),
//                     n / p go to the queue's next / previous item.
(function () {
  "use strict";

  function typing(target) {
    if (!target) return false;
    var tag = target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
  }

  function follow(id) {
    var link = document.getElementById(id);
    if (!link || !link.href) return false;
    window.location.assign(link.href);
    return true;
  }

  // Queue list selection.
  var rows = Array.prototype.slice.call(document.querySelectorAll("#results tr[data-row]"));
  var selected = -1;
  function select(index) {
    if (!rows.length) return;
    selected = Math.max(0, Math.min(rows.length - 1, index));
    rows.forEach(function (row, i) { row.classList.toggle("selected", i === selected); });
    var link = rows[selected].querySelector("a.row-link");
    if (link) link.focus();
  }

  function pick(value) {
    var radio = document.getElementById("verdict-" + value);
    if (!radio) return false;
    radio.checked = true;
    var rationale = document.getElementById("verdict-rationale");
    if (rationale) rationale.focus();
    return true;
  }

  document.addEventListener("keydown", function (event) {
    var form = document.getElementById("verdict-form");
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && form &&
        form.contains(event.target)) {
      event.preventDefault();
      if (typeof form.requestSubmit === "function") form.requestSubmit(); else form.submit();
      return;
    }
    if (event.key === "Escape" && typing(event.target)) { event.target.blur(); return; }
    if (typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
    switch (event.key) {
      case "j": select(selected + 1); break;
      case "k": select(selected - 1); break;
      case "t": pick("true"); break;
      case "f": pick("false"); break;
      case "r": {
        var rationale = document.getElementById("verdict-rationale");
        if (rationale) rationale.focus();
        break;
      }
      case "n": if (!follow("queue-next")) follow("queue-start"); break;
      case "p": follow("queue-previous"); break;
      default:
        // Digits 1..9 pick the queue's categories, in the order the form lists them.
        if (/^[1-9]$/.test(event.key) && pick("category-" + event.key)) break;
        return;
    }
    event.preventDefault();
  });
})();
