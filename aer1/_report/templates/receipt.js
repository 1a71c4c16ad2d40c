(function () {
  "use strict";
  // Everything here reads the page's own text as data: nothing from the receipt is parsed as markup or run.
  var steps = Array.prototype.slice.call(document.querySelectorAll("article.step"));
  var meta = steps.map(function (s) {
    return {agent: s.getAttribute("data-agent"), kind: s.getAttribute("data-kind"),
            tool: s.getAttribute("data-tool"), status: s.getAttribute("data-status")};
  });
  var index = [];  // each step's text, lowercased once, built in chunks after load
  var CHUNK = 1000, DEBOUNCE_MS = 150;
  var q = document.getElementById("q");
  var selects = ["agent", "kind", "tool", "status"].map(function (k) {
    return [k, document.getElementById("f-" + k)];
  });
  var count = document.getElementById("step-count");
  var timer = null;

  function indexUpTo(n) {
    for (var i = index.length; i < n; i += 1) { index.push(steps[i].textContent.toLowerCase()); }
  }
  function indexChunk() {
    if (index.length === 0) { performance.mark("aer1-index-start"); }
    indexUpTo(Math.min(index.length + CHUNK, steps.length));
    if (index.length < steps.length) { setTimeout(indexChunk, 0); return; }
    performance.measure("aer1-index", "aer1-index-start");
  }

  function apply() {
    if (!q) { return; }
    performance.mark("aer1-filter-start");
    var terms = q.value.toLowerCase().split(/\s+/).filter(function (t) { return t !== ""; });
    var wanted = selects.filter(function (p) { return p[1] && p[1].value !== ""; })
      .map(function (p) { return [p[0], p[1].value]; });
    if (terms.length) { indexUpTo(steps.length); }
    var shown = 0;
    for (var i = 0; i < steps.length; i += 1) {
      var ok = true, m = meta[i], j;
      for (j = 0; ok && j < wanted.length; j += 1) { ok = m[wanted[j][0]] === wanted[j][1]; }
      for (j = 0; ok && j < terms.length; j += 1) { ok = index[i].indexOf(terms[j]) >= 0; }
      if (steps[i].hidden === ok) { steps[i].hidden = !ok; }  // touch only the steps that change
      if (ok) { shown += 1; }
    }
    count.textContent = String(shown);
    performance.measure("aer1-filter", "aer1-filter-start");
  }

  function later() {
    if (timer !== null) { clearTimeout(timer); }
    timer = setTimeout(function () { timer = null; apply(); }, DEBOUNCE_MS);
  }

  function setAll(open) {
    for (var i = 0; i < steps.length; i += 1) {
      var d = steps[i].hidden ? null : steps[i].querySelector("details.full");
      if (d && d.open !== open) { d.open = open; }
    }
  }

  function openTarget() {
    var id = window.location.hash.slice(1);
    var el = id ? document.getElementById(id) : null;
    if (!el) { return; }
    if (el.hidden) { el.hidden = false; }
    var d = el.tagName === "DETAILS" ? el : el.querySelector("details.full");
    if (d) { d.open = true; }
    el.scrollIntoView();
  }

  function copy(button) {
    var text = button.getAttribute("data-copy") || "";
    function done(ok) {
      button.textContent = ok ? "copied" : "select";
      setTimeout(function () { button.textContent = "copy"; }, 1500);
    }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(fallback(text)); });
    } else {
      done(fallback(text));
    }
  }
  function fallback(text) {
    var area = document.createElement("textarea");
    area.value = text;  // a value, never markup
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area);
    return ok;
  }

  document.addEventListener("click", function (e) {
    var b = e.target.closest ? e.target.closest("button.copy") : null;
    if (b) { e.preventDefault(); copy(b); }
  });
  if (q) {
    q.addEventListener("input", later);
    selects.forEach(function (p) { if (p[1]) { p[1].addEventListener("change", apply); } });
    document.getElementById("expand-all").addEventListener("click", function () { setAll(true); });
    document.getElementById("collapse-all").addEventListener("click", function () { setAll(false); });
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
  if (steps.length) { setTimeout(indexChunk, 0); }
})();
