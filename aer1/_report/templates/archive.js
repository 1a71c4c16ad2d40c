(function () {
  "use strict";
  // The rows come from the page's JSON data block (never run); one page of them is drawn at a time, as text.
  var KEYS = ["verdict", "failed", "reason", "goal", "status", "agents", "steps", "signer", "time", "source", "page"];
  var COLUMNS = ["verdict", "goal", "status", "agents", "steps", "signer", "time", "source"];
  var table = document.getElementById("receipts");
  var body = table.tBodies[0];
  var input = document.getElementById("filter");
  var verdict = document.getElementById("verdict-filter");
  var perPage = Number(table.getAttribute("data-per-page")) || 100;
  var all = JSON.parse(document.getElementById("rows").textContent).map(function (values) {
    var r = {};
    KEYS.forEach(function (k, i) { r[k] = values[i]; });
    r.text = COLUMNS.map(function (k) { return String(r[k]); }).join(" ").toLowerCase();
    return r;
  });
  var shown = all, page = 0, sortKey = null, asc = true, timer = null;

  function cell(tr, text, cls) {
    var td = tr.insertCell(-1);
    td.textContent = text;
    if (cls) { td.className = cls; }
    return td;
  }
  function draw() {
    var pages = Math.max(1, Math.ceil(shown.length / perPage));
    page = Math.min(page, pages - 1);
    var rows = document.createDocumentFragment();
    shown.slice(page * perPage, (page + 1) * perPage).forEach(function (r) {
      var tr = document.createElement("tr");
      tr.className = "receipt";
      tr.setAttribute("data-verdict", r.verdict);
      var v = cell(tr, r.verdict, r.verdict === "VALID" ? "s-PASS" : "s-FAIL");
      v.title = r.reason;
      if (r.failed) {
        var why = document.createElement("span");
        why.className = "muted";
        why.textContent = " (" + r.failed + ")";
        v.appendChild(why);
      }
      var link = document.createElement("a");
      link.setAttribute("href", r.page);  // a page name this report wrote (NNNN.html), never from the receipt
      link.textContent = r.goal || "(no goal)";
      tr.insertCell(-1).appendChild(link);
      cell(tr, r.status);
      cell(tr, r.agents);
      cell(tr, String(r.steps)).setAttribute("data-key", String(r.steps));
      cell(tr, r.signer);
      cell(tr, r.time);
      cell(tr, r.source);
      rows.appendChild(tr);
    });
    body.textContent = "";
    body.appendChild(rows);
    document.getElementById("shown").textContent = String(shown.length);
    document.getElementById("page-no").textContent = String(page + 1);
    document.getElementById("pages").textContent = String(pages);
    document.getElementById("prev").disabled = page === 0;
    document.getElementById("next").disabled = page >= pages - 1;
  }
  function apply() {
    var q = input.value.toLowerCase(), v = verdict.value;
    shown = all.filter(function (r) { return r.text.indexOf(q) >= 0 && (!v || r.verdict === v); });
    if (sortKey !== null) { order(); }
    page = 0;
    draw();
  }
  function order() {
    shown = shown.slice().sort(function (a, b) {
      var x = a[sortKey], y = b[sortKey];
      var c = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
      return asc ? c : -c;
    });
  }
  input.addEventListener("input", function () {
    if (timer !== null) { clearTimeout(timer); }
    timer = setTimeout(function () { timer = null; apply(); }, 120);
  });
  verdict.addEventListener("change", apply);
  document.getElementById("prev").addEventListener("click", function () { page -= 1; draw(); });
  document.getElementById("next").addEventListener("click", function () { page += 1; draw(); });
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
    th.addEventListener("click", function () {
      asc = !(sortKey === COLUMNS[i] && asc);
      sortKey = COLUMNS[i];
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      order();
      page = 0;
      draw();
    });
  });
  draw();
})();
