(function () {
  "use strict";
  // Everything here reads the page's own text as data: nothing from the receipt is parsed as markup or run.
  var steps = Array.prototype.slice.call(document.querySelectorAll("article.step"));
  var chunks = Array.prototype.slice.call(document.querySelectorAll("#steps .chunk"));
  var STEP_PX = 64;  // a step's height before it is first drawn (a block's placeholder is its shown steps')
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

  // A filter decides every step's visibility at once (cheap: plain arrays), then writes it to the page one block
  // of steps at a time: at once for the blocks on or near the screen, the others when they come near. A block
  // with no step to show is hidden whole, and its placeholder height follows its shown steps.
  var match = new Uint8Array(steps.length).fill(1);
  var first = [], stale = [], near = [], openGen = 0, openWant = false, opened = [];
  (function () {
    var i = 0;
    chunks.forEach(function (chunk, c) {
      first.push(i); i += chunk.children.length; stale.push(false); near.push(false); opened.push(0);
    });
    first.push(i);
  })();
  function write(c) {
    for (var i = first[c]; i < first[c + 1]; i += 1) {
      var want = match[i] === 1;
      if (steps[i].hidden === want) { steps[i].hidden = !want; }  // touch only the steps that change
      if (want && opened[c] !== openGen) {
        var d = steps[i].querySelector("details.full");
        if (d && d.open !== openWant) { d.open = openWant; }
      }
    }
    opened[c] = openGen;
    stale[c] = false;
  }
  function writeNear() {
    var margin = window.innerHeight;
    for (var c = 0; c < chunks.length; c += 1) {
      if (!stale[c] || chunks[c].hidden) { continue; }
      var r = chunks[c].getBoundingClientRect();
      if (r.bottom > -margin && r.top < window.innerHeight + margin) { write(c); }
    }
  }
  function writeAll() {
    for (var c = 0; c < chunks.length; c += 1) { if (stale[c]) { write(c); } }
  }
  var watcher = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      var c = chunks.indexOf(e.target);
      near[c] = e.isIntersecting;
      if (near[c] && stale[c]) { write(c); }
    });
  }, {rootMargin: "1500px 0px"}) : null;
  chunks.forEach(function (chunk) { if (watcher) { watcher.observe(chunk); } });

  function apply() {
    if (!q) { return; }
    performance.mark("aer1-filter-start");
    var terms = q.value.toLowerCase().split(/\s+/).filter(function (t) { return t !== ""; });
    var wanted = selects.filter(function (p) { return p[1] && p[1].value !== ""; })
      .map(function (p) { return [p[0], p[1].value]; });
    if (terms.length) { indexUpTo(steps.length); }
    var shown = 0;
    for (var c = 0; c < chunks.length; c += 1) {
      var inChunk = 0, changed = false;
      for (var i = first[c]; i < first[c + 1]; i += 1) {
        var ok = 1, m = meta[i], j;
        for (j = 0; ok && j < wanted.length; j += 1) { ok = m[wanted[j][0]] === wanted[j][1] ? 1 : 0; }
        for (j = 0; ok && j < terms.length; j += 1) { ok = index[i].indexOf(terms[j]) >= 0 ? 1 : 0; }
        if (match[i] !== ok) { match[i] = ok; changed = true; }
        inChunk += ok;
      }
      if (changed) {
        stale[c] = true;
        if (chunks[c].hidden !== (inChunk === 0)) { chunks[c].hidden = inChunk === 0; }
        chunks[c].style.containIntrinsicSize = "auto " + (inChunk * STEP_PX) + "px";
      }
      shown += inChunk;
    }
    writeNear();
    count.textContent = String(shown);
    performance.measure("aer1-filter", "aer1-filter-start");
  }

  function later() {
    if (timer !== null) { clearTimeout(timer); }
    timer = setTimeout(function () { timer = null; apply(); }, DEBOUNCE_MS);
  }

  function setAll(open) {
    openGen += 1;
    openWant = open;
    for (var c = 0; c < chunks.length; c += 1) { stale[c] = true; }
    writeNear();
  }

  function openTarget() {
    var id = window.location.hash.slice(1);
    var el = id ? document.getElementById(id) : null;
    if (!el) { return; }
    var at = steps.indexOf(el);
    if (at >= 0 && el.hidden) {  // a step linked to is shown, whatever the filters say
      var c = chunks.indexOf(el.parentNode);
      if (stale[c]) { write(c); }
      match[at] = 1; el.hidden = false; chunks[c].hidden = false;
    }
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
  window.addEventListener("beforeprint", writeAll);  // a printout holds every block as the screen would
  openTarget();
  if (steps.length) { setTimeout(indexChunk, 0); }
})();
