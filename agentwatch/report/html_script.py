"""The HTML report's one script (allowed by its hash in the page's Content-Security-Policy).

- Sortable tables: click a header to sort by that column (numbers by their value, missing values last);
  click again to reverse.
- Lists of failing conversations (`report.html_failures`): filled from their section's data block a page of
  rows at a time when opened, with previous / next buttons. Every text from a transcript goes in as text.
- A conversation opened in a list: the chunk holding its transcript is decompressed (gzip, the browser's
  DecompressionStream; once per chunk) and its body, HTML escaped by the report, is shown.
- A link to a list (`#task-3` in the per-task table) opens it and its parents and scrolls to it.
"""

from __future__ import annotations

SCRIPT = """
(function () {
  document.querySelectorAll('table.sortable').forEach(function (table) {
    table.querySelectorAll('thead th').forEach(function (th) {
      th.addEventListener('click', function () {
        var body = table.tBodies[0], i = th.cellIndex;
        var asc = th.getAttribute('aria-sort') !== 'ascending';
        table.querySelectorAll('thead th').forEach(function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
        function key(row) {
          var cell = row.cells[i], v = cell.getAttribute('data-v');
          if (v === null) { return cell.textContent.trim(); }
          return v === '' ? null : parseFloat(v);
        }
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          if (x === null || y === null) { return x === y ? 0 : (x === null ? 1 : -1); }
          var d = (typeof x === 'number' && typeof y === 'number') ? x - y
            : String(x).localeCompare(String(y), undefined, {numeric: true});
          return asc ? d : -d;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });

  var indexes = {}, chunks = {};
  function index(section) {
    if (!(section in indexes)) {
      indexes[section] = JSON.parse(document.getElementById(section + 'failing').textContent);
    }
    return indexes[section];
  }
  function chunk(n) {
    if (!(n in chunks)) {
      var text = atob(document.getElementById('aw-chunk-' + n).textContent.trim());
      var bytes = new Uint8Array(text.length);
      for (var i = 0; i < text.length; i++) { bytes[i] = text.charCodeAt(i); }
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
      chunks[n] = new Response(stream).text().then(JSON.parse);
    }
    return chunks[n];
  }
  function add(parent, tag, cls, text) {
    var el = document.createElement(tag);
    if (cls) { el.className = cls; }
    if (text !== undefined) { el.textContent = text; }
    parent.appendChild(el);
    return el;
  }
  function conversation(row) {
    var d = document.createElement('details');
    d.className = 'conv';
    var s = add(d, 'summary');
    add(s, 'code', '', row[0]);
    if (row[1] !== '') {
      s.appendChild(document.createTextNode(' · task ' + row[1] + ' · ' + row[2] + ' · '));
      add(s, 'span', {passed: 'ok', failed: 'bad'}[row[3]] || 'na', row[3]);
    }
    if (row[4]) { s.appendChild(document.createTextNode(' · ' + row[4])); }
    var body = add(d, 'div', 'body');
    d.addEventListener('toggle', function () {
      if (!d.open || d.getAttribute('data-loaded')) { return; }
      d.setAttribute('data-loaded', '1');
      if (row[5] === null) {
        body.textContent = 'Transcript not carried in this page (its budget for transcripts was spent).';
        return;
      }
      body.textContent = 'opening…';
      chunk(row[5]).then(function (bodies) { body.innerHTML = bodies[row[6]]; },
        function (e) { body.textContent = 'could not open the transcript: ' + e; });
    });
    return d;
  }
  function fill(list) {
    var data = index(list.getAttribute('data-section'));
    var members = data[list.getAttribute('data-kind')][+list.getAttribute('data-at')][1];
    var box = list.querySelector('.rows'), pager = list.querySelector('.pager'), size = data.page;
    function show(page) {
      box.textContent = '';
      members.slice(page * size, (page + 1) * size).forEach(function (i) {
        box.appendChild(conversation(data.rows[i]));
      });
      pager.textContent = '';
      if (members.length <= size) { return; }
      var pages = Math.ceil(members.length / size);
      var prev = add(pager, 'button', 'prev', '← previous');
      prev.type = 'button';
      prev.disabled = page === 0;
      prev.addEventListener('click', function () { show(page - 1); });
      add(pager, 'span', 'at', ' rows ' + (page * size + 1) + '–' +
        Math.min(members.length, (page + 1) * size) + ' of ' + members.length + ' (page ' + (page + 1) +
        ' of ' + pages + ') ');
      var next = add(pager, 'button', 'next', 'next →');
      next.type = 'button';
      next.disabled = page === pages - 1;
      next.addEventListener('click', function () { show(page + 1); });
    }
    show(0);
  }
  document.querySelectorAll('details.list').forEach(function (list) {
    function once() {
      if (list.open && !list.getAttribute('data-filled')) { list.setAttribute('data-filled', '1'); fill(list); }
    }
    list.addEventListener('toggle', once);
    once();
  });
  function openTarget() {
    var id = location.hash.slice(1);
    try { id = decodeURIComponent(id); } catch (e) { /* a hand-typed "#%" names no element as written */ }
    var target = id ? document.getElementById(id) : null;
    if (!target) { return; }
    for (var el = target; el; el = el.parentElement) {
      if (el.tagName === 'DETAILS') { el.open = true; }
    }
    target.scrollIntoView();
  }
  window.addEventListener('hashchange', openTarget);
  document.querySelectorAll('a[href^="#"]').forEach(function (a) {
    a.addEventListener('click', function () { setTimeout(openTarget, 0); });  // also when the hash is unchanged
  });
  openTarget();
})();
"""
