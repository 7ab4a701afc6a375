// Reviewer safety: a sensitive piece (an operation's sensitive harm category) is rendered
// collapsed: text hidden, images and video blurred, audio folded away. Its Reveal button
// posts to the audited reveal endpoint; this script sends that POST in place and, once the
// server has recorded the reveal, uncovers every block of that piece on the page without a
// reload. Loaded as a static file (the CSP forbids inline script). Without it the form posts
// normally and the server sends the browser back with the piece shown.
(function () {
  "use strict";

  function blocksOf(pieceId) {
    return Array.prototype.filter.call(
      document.querySelectorAll(".sensitive[data-piece]"),
      function (block) { return block.getAttribute("data-piece") === pieceId; }
    );
  }

  function uncover(pieceId) {
    var first = null;
    blocksOf(pieceId).forEach(function (block) {
      block.classList.remove("is-collapsed");
      // A collapsed video is kept out of the tab order; revealed, it plays like any other.
      Array.prototype.forEach.call(block.querySelectorAll("video[tabindex]"), function (video) {
        video.removeAttribute("tabindex");
      });
      var form = block.querySelector("form[data-reveal]");
      if (form) {
        var note = document.createElement("span");
        note.className = "muted small revealed-note";
        note.textContent = "revealed; recorded in the audit trail";
        var label = form.querySelector(".sensitive-label");
        var bar = form.parentNode;
        if (label) bar.insertBefore(label, form);
        bar.insertBefore(document.createTextNode(" "), form);
        bar.replaceChild(note, form);
      }
      if (!first) first = block.querySelector(".sensitive-body");
    });
    // Keyboard and screen-reader users land on what they asked to see.
    if (first) first.focus();
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-reveal")) return;
    if (typeof window.fetch !== "function" || typeof window.FormData !== "function") return;
    event.preventDefault();
    var button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    window.fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      credentials: "same-origin",
      headers: { "Accept": "application/json" }
    }).then(function (response) {
      if (!response.ok) throw new Error("reveal refused: " + response.status);
      return response.json();
    }).then(function () {
      uncover(form.getAttribute("data-reveal"));
    }).catch(function () {
      // The plain POST shows the server's answer (an error page, or the piece revealed).
      if (button) button.disabled = false;
      form.submit();
    });
  });
})();
