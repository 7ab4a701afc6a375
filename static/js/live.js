// Live pages (redteam/common/live.py): the page asks its endpoint (data-live-url on
// #live-banner) every data-live-every seconds whether new rows arrived since it was rendered,
// and then shows how many, with a Refresh button. It never reloads by itself, so nothing a
// reader typed is lost; Refresh keeps what was typed into the page's forms and puts it back
// after the reload (the URL, hence the page's filters and place, stays the same).
// Hidden tabs ask less often; errors stop the asking (a few retries for server trouble).
(function () {
  "use strict";

  var STORE = "redteam-live-typed";
  var KEEP_MS = 120000;
  var HIDDEN_FACTOR = 5;
  var MAX_DELAY_MS = 300000;
  var MAX_FAILURES = 3;
  var SKIPPED_TYPES = { hidden: 1, password: 1, file: 1, submit: 1, button: 1, reset: 1, image: 1 };

  function here() {
    return window.location.href.split("#")[0];
  }

  // --- what was typed ----------------------------------------------------------------------

  function fields(visit) {
    Array.prototype.forEach.call(document.forms, function (form, formIndex) {
      var seen = {};
      var formKey = form.id ? "#" + form.id : String(formIndex);
      Array.prototype.forEach.call(form.elements, function (el) {
        var name = el.name;
        var type = (el.type || "").toLowerCase();
        if (!name || SKIPPED_TYPES[type] || el.disabled) return;
        var n = seen[name] || 0;
        seen[name] = n + 1;
        visit(formKey + "|" + name + "|" + n, el, type);
      });
    });
  }

  function typed() {
    var saved = {};
    fields(function (key, el, type) {
      if (type === "checkbox" || type === "radio") {
        if (el.checked !== el.defaultChecked) saved[key] = el.checked;
      } else if (el.tagName === "SELECT") {
        var changed = false;
        var chosen = [];
        Array.prototype.forEach.call(el.options, function (o) {
          if (o.selected !== o.defaultSelected) changed = true;
          if (o.selected) chosen.push(o.value);
        });
        if (changed) saved[key] = chosen;
      } else if (el.value !== el.defaultValue) {
        saved[key] = el.value;
      }
    });
    return saved;
  }

  function changed(el) {
    el.dispatchEvent(new Event("input", { bubbles: true }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function restoreTyped() {
    var raw = null;
    try {
      raw = window.sessionStorage.getItem(STORE);
      window.sessionStorage.removeItem(STORE);
    } catch (e) {
      return;
    }
    if (!raw) return;
    var saved;
    try {
      saved = JSON.parse(raw);
    } catch (e) {
      return;
    }
    if (!saved || saved.url !== here() || Date.now() - saved.at > KEEP_MS) return;
    var values = saved.fields || {};
    fields(function (key, el, type) {
      if (!Object.prototype.hasOwnProperty.call(values, key)) return;
      var value = values[key];
      if (type === "checkbox" || type === "radio") {
        if (el.checked === el.defaultChecked) { el.checked = !!value; changed(el); }
      } else if (el.tagName === "SELECT") {
        if (!Array.isArray(value)) return;
        Array.prototype.forEach.call(el.options, function (o) {
          o.selected = value.indexOf(o.value) !== -1;
        });
        changed(el);
      } else if (el.value === el.defaultValue && typeof value === "string") {
        el.value = value;
        changed(el);
      }
    });
  }

  function refresh() {
    try {
      window.sessionStorage.setItem(STORE, JSON.stringify({ url: here(), at: Date.now(), fields: typed() }));
    } catch (e) {
      // Storage refused (private mode, quota): refresh anyway, as the browser would.
    }
    if (window.location.hash) {
      window.location.assign(here());
    } else {
      window.location.reload();
    }
  }

  restoreTyped();

  // --- asking ------------------------------------------------------------------------------

  var banner = document.getElementById("live-banner");
  if (!banner || !window.fetch || !banner.getAttribute("data-live-url")) return;
  var url = banner.getAttribute("data-live-url");
  var every = Math.max(1, parseFloat(banner.getAttribute("data-live-every")) || 12) * 1000;
  var timer = null;
  var stopped = false;
  var busy = false;
  var failures = 0;
  var text = null;

  function show(message) {
    if (!message) return;
    if (!text) {
      text = document.createElement("span");
      text.className = "live-text";
      var button = document.createElement("button");
      button.type = "button";
      button.className = "live-refresh";
      button.textContent = "Refresh";
      button.addEventListener("click", refresh);
      banner.appendChild(text);
      banner.appendChild(document.createTextNode(" "));
      banner.appendChild(button);
    }
    text.textContent = message + ".";
    banner.hidden = false;
  }

  function stop() {
    stopped = true;
    window.clearTimeout(timer);
  }

  function schedule(ms) {
    window.clearTimeout(timer);
    if (!stopped) timer = window.setTimeout(ask, ms);
  }

  function pause() {
    if (failures) return Math.min(every * Math.pow(2, failures), MAX_DELAY_MS);
    return document.hidden ? Math.min(every * HIDDEN_FACTOR, MAX_DELAY_MS) : every;
  }

  function ask() {
    if (stopped || busy) return;
    busy = true;
    window.fetch(url, {
      credentials: "same-origin",
      cache: "no-store",
      redirect: "error",
      headers: { Accept: "application/json" }
    }).then(function (response) {
      if (!response.ok) {
        var error = new Error("HTTP " + response.status);
        error.status = response.status;
        throw error;
      }
      return response.json();
    }).then(function (answer) {
      failures = 0;
      if (answer && typeof answer.message === "string") show(answer.message);
      if (answer && answer.final) stop();
    }, function (error) {
      failures += 1;
      // A refusal or a bad marker will not get better; server trouble might, briefly.
      if ((error.status && error.status < 500) || failures >= MAX_FAILURES) stop();
    }).then(function () {
      busy = false;
      schedule(pause());
    });
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && !busy && !stopped) schedule(1000);
  });
  schedule(every);
})();
