(function () {
  var table = document.getElementById("receipts");
  var input = document.getElementById("filter");
  var verdict = document.getElementById("verdict-filter");
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  function apply() {
    var q = input.value.toLowerCase(), v = verdict.value, shown = 0;
    rows.forEach(function (r) {
      var ok = r.textContent.toLowerCase().indexOf(q) >= 0 && (!v || r.getAttribute("data-verdict") === v);
      r.hidden = !ok;
      if (ok) { shown += 1; }
    });
    document.getElementById("shown").textContent = String(shown);
  }
  input.addEventListener("input", apply);
  verdict.addEventListener("change", apply);
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
    th.addEventListener("click", function () {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      rows.sort(function (a, b) {
        var x = a.cells[i].getAttribute("data-key") || a.cells[i].textContent;
        var y = b.cells[i].getAttribute("data-key") || b.cells[i].textContent;
        var nx = Number(x), ny = Number(y);
        var c = (x !== "" && y !== "" && !isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return asc ? c : -c;
      });
      rows.forEach(function (r) { table.tBodies[0].appendChild(r); });
    });
  });
  apply();
})();
