// Campaign page: click a column header to sort (numbers by their data-v value), type words to filter the rows.
(function () {
  var table = document.getElementById("episodes");
  if (!table) { return; }
  var body = table.tBodies[0], filter = document.getElementById("filter"), shown = document.getElementById("shown");
  function key(row, col) {
    var cell = row.cells[col], v = cell.getAttribute("data-v");
    return v === null ? cell.textContent.trim() : v;
  }
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
    th.addEventListener("click", function () {
      var numeric = th.classList.contains("num");
      var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) { other.removeAttribute("aria-sort"); });
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a, col), y = key(b, col);
        if (numeric) { x = parseFloat(x); y = parseFloat(y); return dir * ((x > y) - (x < y)); }
        return dir * x.localeCompare(y, undefined, {numeric: true});
      });
      rows.forEach(function (row) { body.appendChild(row); });
      th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    });
  });
  filter.addEventListener("input", function () {
    var terms = filter.value.toLowerCase().split(/\s+/).filter(Boolean), n = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      var text = row.textContent.toLowerCase();
      var keep = terms.every(function (t) { return text.indexOf(t) >= 0; });
      row.hidden = !keep;
      n += keep ? 1 : 0;
    });
    shown.textContent = n + " of " + body.rows.length + " shown";
  });
})();
