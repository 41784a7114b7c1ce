/**
 * The live monitoring page (/ui), embedded as strings so it ships inside
 * dist/ (tsc copies no other files) and needs nothing from the internet: no
 * build step, no CDN, no chart library (sparklines are inline SVG).
 *
 * The page polls GET /v1/status once a second and updates rows in place.
 * Everything from the server is inserted with textContent, never innerHTML
 * (tag names are data). The script is served as /ui/app.js so the page can run
 * under a strict Content-Security-Policy without inline script.
 *
 * The client code below is plain ES2017 without template literals, so it can
 * live inside this file's template strings unescaped.
 */

export const UI_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sequoia monitor</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/app.css">
</head>
<body>
<header>
  <h1>Sequoia</h1>
  <span id="version" class="muted"></span>
  <span id="uptime" class="muted"></span>
  <span id="conn" class="pill pill-warn">connecting</span>
  <form id="token-form" autocomplete="off">
    <span id="mode" class="muted"></span>
    <input id="token" type="password" placeholder="admin or metrics token" aria-label="admin or metrics token">
    <button type="submit">Use token</button>
    <button type="button" id="token-clear">Forget</button>
  </form>
</header>
<main>
<section class="cards">
  <div class="card" id="store-card">
    <h2>Store</h2>
    <div><span id="store-dot" class="dot"></span> <span id="store-kind"></span></div>
    <div id="store-detail" class="muted"></div>
  </div>
  <div class="card">
    <h2>Errors by code <span class="muted">(since start)</span></h2>
    <table id="errors"><tbody></tbody></table>
    <div id="no-errors" class="muted">none</div>
  </div>
  <div class="card" id="snowflake-card">
    <h2>Snowflake workers <span id="workers-count" class="muted"></span></h2>
    <table id="workers" hidden><thead><tr><th>layout</th><th class="num">worker id</th><th>lease</th><th>layout ends in</th></tr></thead><tbody></tbody></table>
    <div id="no-workers" class="muted">none on this server</div>
  </div>
</section>
<section>
  <h2>Segment tags</h2>
  <div class="table-box">
  <table id="tags">
    <thead><tr>
      <th>status</th><th>tag</th><th>current [value, max)</th><th>current buffer</th><th>next buffer</th>
      <th class="num">remaining</th><th class="num">step (stored)</th><th class="num">rate /s</th><th>rate, last minute</th>
      <th class="num">cover</th><th>last load</th><th class="num">load failures</th><th>client reserves</th>
    </tr></thead>
    <tbody></tbody>
  </table>
  </div>
  <div id="legend">
    <span class="legend-item" data-state="ok"><span class="swatch swatch-ok"></span> green: cover at least <span class="cover-ok">300</span> s, or idle with IDs buffered</span>
    <span class="legend-item" data-state="warn"><span class="swatch swatch-warn"></span> amber: cover between <span class="cover-critical">60</span> and <span class="cover-ok">300</span> s, or the last load failed while the buffers hold, or the first segment is loading</span>
    <span class="legend-item" data-state="critical"><span class="swatch swatch-critical"></span> red: cover below <span class="cover-critical">60</span> s, the tag refuses (rollback, deleted), or the store is failing with the buffers low</span>
    <span class="legend-item" data-state="conflict"><span class="swatch swatch-conflict"></span> purple: a client reported a business unique-key conflict on one of its IDs (see docs/audit.md), until the server restarts</span>
    <div class="muted">Cover = buffered IDs / recent rate. <span id="updated"></span></div>
  </div>
  <p id="no-tags" class="muted">No tags yet: a tag appears here once this server has handed out its first ID.</p>
</section>
<section>
  <h2>Recent errors</h2>
  <div class="table-box"><table id="recent"><thead><tr><th>time</th><th>code</th><th>status</th><th>request</th><th>message</th></tr></thead><tbody></tbody></table></div>
  <p id="recent-note" class="muted"></p>
</section>
</main>
<script src="/ui/app.js"></script>
</body>
</html>
`;

export const UI_CSS = `
:root { --ok: #1a7f37; --warn: #b7791f; --crit: #c62828; --conflict: #8250df; --bg: #f7f8fa; --fg: #1f2328; --muted: #656d76; --line: #d8dee4; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--fg); }
header { display: flex; align-items: center; gap: 12px; padding: 10px 20px; background: #24292f; color: #fff; flex-wrap: wrap; }
header h1 { font-size: 18px; margin: 0 8px 0 0; }
header .muted { color: #c9d1d9; }
#token-form { margin-left: auto; display: flex; gap: 6px; align-items: center; }
#token-form input { padding: 3px 6px; }
main { padding: 12px 20px; }
h2 { font-size: 15px; margin: 14px 0 6px; }
.muted { color: var(--muted); }
.cards { display: flex; gap: 12px; flex-wrap: wrap; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 6px 12px 10px; min-width: 240px; }
.card h2 { margin-top: 6px; }
table { border-collapse: collapse; background: #fff; }
/* The tables wrap their cells instead of growing past the window: tag names, client names and paths are
   unbounded data. The box scrolls only on a window too narrow for the shortest cells (never at 1400 px). */
.table-box { max-width: 100%; overflow-x: auto; }
#tags, #recent { width: 100%; border: 1px solid var(--line); font-size: 13px; }
th, td { padding: 4px 6px; border-bottom: 1px solid var(--line); text-align: left; }
th { background: #eef1f4; font-weight: 600; font-size: 12px; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num, td.health, td.cover, td.spark, .pill { white-space: nowrap; }
td.step, td.failures { white-space: normal; }
td.tag { font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
#tags td.tag .name { display: block; min-width: 10ch; max-width: 24ch; }
td.reserves, td.failures, #recent td { overflow-wrap: anywhere; }
#tags td.reserves { max-width: 22ch; }
.pill { padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; }
/* One colour per state; the legend's swatches wear the same classes, so page and legend cannot disagree. */
.pill-ok, .swatch-ok { background: var(--ok); }
.pill-warn, .swatch-warn { background: var(--warn); }
.pill-critical, .swatch-critical { background: var(--crit); }
.pill-conflict, .swatch-conflict { background: var(--conflict); }
.dot { display: inline-block; width: 10px; height: 10px; border-radius: 50%; background: var(--muted); }
.dot.ok { background: var(--ok); } .dot.critical { background: var(--crit); }
tr.state-ok td.cover { color: var(--ok); font-weight: 600; }
tr.state-warn td.cover { color: var(--warn); font-weight: 600; }
tr.state-critical td.cover { color: var(--crit); font-weight: 600; }
tr.state-conflict td.cover { color: var(--conflict); font-weight: 600; }
tr.state-critical { background: #fdecea; }
tr.state-conflict { background: #f3eefc; }
.bar { width: 84px; height: 12px; background: #e6e9ed; border-radius: 3px; overflow: hidden; display: block; }
.bar > span { display: block; height: 100%; background: #3b82f6; }
.bar.empty > span { background: var(--crit); }
.bar.loading { background: repeating-linear-gradient(45deg, #e6e9ed, #e6e9ed 4px, #cfd5dc 4px, #cfd5dc 8px); }
.bar-label { display: block; font-size: 11px; color: var(--muted); white-space: nowrap; }
svg.spark { vertical-align: middle; }
svg.spark polyline { fill: none; stroke: #3b82f6; stroke-width: 1.5; }
#legend { margin: 6px 0; font-size: 12px; display: flex; flex-wrap: wrap; gap: 4px 18px; }
#legend > div { flex-basis: 100%; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 3px; vertical-align: -2px; }
#workers td.layout { font-family: ui-monospace, monospace; }
`;

export const UI_JS = `'use strict';
(function () {
  var POLL_MS = 1000;
  var TOKEN_KEY = 'sequoia-admin-token';
  var rows = new Map();
  var token = sessionStorage.getItem(TOKEN_KEY) || '';

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fmtInt(n) { return n === null || n === undefined ? '-' : Number(n).toLocaleString('en-US'); }
  function fmtRate(r) { return r >= 100 ? Math.round(r).toLocaleString('en-US') : r >= 1 ? r.toFixed(1) : r.toFixed(2); }
  function fmtSeconds(s) {
    if (s === null || s === undefined) return '\\u221e idle';
    if (s < 120) return s.toFixed(s < 10 ? 1 : 0) + ' s';
    if (s < 7200) return (s / 60).toFixed(0) + ' min';
    if (s < 172800) return (s / 3600).toFixed(1) + ' h';
    if (s < 63072000) return (s / 86400).toFixed(0) + ' d';
    return (s / 31557600).toFixed(0) + ' y';
  }
  function fmtAgo(iso) {
    if (!iso) return '-';
    var s = (Date.now() - Date.parse(iso)) / 1000;
    return s < 1 ? 'just now' : fmtSeconds(s) + ' ago';
  }

  function bar(cell, fraction, label, state) {
    cell.textContent = '';
    var b = el('span', 'bar' + (state ? ' ' + state : ''));
    var fill = el('span');
    fill.style.width = Math.max(0, Math.min(100, fraction * 100)).toFixed(1) + '%';
    b.appendChild(fill);
    cell.appendChild(b);
    cell.appendChild(el('span', 'bar-label', label));
  }

  function sparkline(cell, values) {
    var NS = 'http://www.w3.org/2000/svg';
    var w = 84, h = 22;
    var svg = document.createElementNS(NS, 'svg');
    svg.setAttribute('class', 'spark');
    svg.setAttribute('width', String(w));
    svg.setAttribute('height', String(h));
    svg.setAttribute('viewBox', '0 0 ' + w + ' ' + h);
    var max = 0;
    for (var i = 0; i < values.length; i++) max = Math.max(max, values[i]);
    var pts = [];
    var n = Math.max(values.length, 2);
    for (var j = 0; j < values.length; j++) {
      var x = (j / (n - 1)) * (w - 2) + 1;
      var y = h - 2 - (max > 0 ? (values[j] / max) * (h - 4) : 0);
      pts.push(x.toFixed(1) + ',' + y.toFixed(1));
    }
    var line = document.createElementNS(NS, 'polyline');
    line.setAttribute('points', pts.join(' '));
    svg.appendChild(line);
    cell.textContent = '';
    cell.appendChild(svg);
  }

  var COLUMNS = ['health', 'tag', 'range', 'bar-current', 'bar-next', 'remaining num', 'step num', 'rate num', 'spark', 'cover num', 'load', 'failures num', 'reserves'];

  function rowFor(tag) {
    var r = rows.get(tag);
    if (r) return r;
    var tr = el('tr');
    tr.dataset.tag = tag;
    var cells = {};
    COLUMNS.forEach(function (c) {
      var td = el('td', c);
      tr.appendChild(td);
      cells[c.split(' ')[0]] = td;
    });
    cells.tag.appendChild(el('span', 'name', tag));
    r = { tr: tr, cells: cells };
    rows.set(tag, r);
    $('tags').tBodies[0].appendChild(tr);
    return r;
  }

  function renderTag(t) {
    var r = rowFor(t.tag);
    var c = r.cells;
    // A conflict is its own colour (the legend's purple), not red: red says the buffers are short.
    var state = t.businessConflicts > 0 ? 'conflict' : t.health;
    r.tr.dataset.health = t.health;
    r.tr.dataset.state = state;
    r.tr.className = 'state-' + state;
    c.health.textContent = '';
    var pill = el('span', 'pill pill-' + state, state === 'conflict' ? 'CONFLICT ' + t.businessConflicts : t.health === 'ok' ? 'OK' : t.health === 'warn' ? 'WARN' : 'CRITICAL');
    pill.title = t.healthReason;
    c.health.appendChild(pill);
    c.health.title = t.healthReason;
    c.range.textContent = t.current && t.current.value !== null ? '[' + t.current.value + ', ' + t.current.max + ')' : 'empty';
    var cur = t.current ? t.current.remaining : 0;
    var size = t.current ? t.current.size : 0;
    bar(c['bar-current'], size ? cur / size : 0, fmtInt(cur) + ' / ' + fmtInt(size), cur === 0 ? 'empty' : '');
    if (t.nextReady && t.next) bar(c['bar-next'], 1, 'ready ' + fmtInt(t.next.size), '');
    else bar(c['bar-next'], 0, t.loading ? 'loading' : 'not ready', t.loading ? 'loading' : 'empty');
    c.remaining.textContent = fmtInt(t.remaining);
    c.step.textContent = (t.step === null ? '-' : fmtInt(t.step)) + ' (' + (t.storedStep === null ? '-' : fmtInt(t.storedStep)) + ')';
    c.rate.textContent = fmtRate(t.ratePerSecond);
    sparkline(c.spark, t.rateHistory);
    c.cover.textContent = fmtSeconds(t.coverSeconds);
    c.cover.title = t.healthReason;
    c.load.textContent = t.lastLoadAt ? fmtAgo(t.lastLoadAt) + ', ' + t.lastLoadMs + ' ms' : '-';
    var fail = fmtInt(t.loadFailures);
    if (t.refusing) fail += ' refusing ' + t.refusing;
    else if (t.lastError) fail += ' last ' + t.lastError.code;
    c.failures.textContent = fail;
    c.failures.title = t.lastError && t.lastError.message ? t.lastError.message : '';
    // Clients holding a reserve of the tag (taken from this server), for when no server answers.
    var holders = t.reserves || [];
    var held = holders.reduce(function (n, h) { return n + h.ids; }, 0);
    c.reserves.textContent = holders.length ? holders.map(function (h) { return h.client; }).slice(0, 3).join(', ') + (holders.length > 3 ? ' +' + (holders.length - 3) : '') + ': ' + fmtInt(held) : '-';
    c.reserves.title = holders.map(function (h) {
      return h.client + (h.address ? ' (' + h.address + ')' : '') + ': ' + fmtInt(h.ids) + ' IDs [' + h.first + '..' + h.last + '] ' + fmtAgo(h.at);
    }).join('\\n');
  }

  function render(s) {
    $('version').textContent = (/^[0-9]/.test(s.version) ? 'v' : '') + s.version;
    $('uptime').textContent = 'up ' + fmtSeconds(s.uptimeSeconds);
    $('mode').textContent = s.admin
      ? (s.adminTokenRequired ? 'admin view' : 'admin view (no token configured)')
      : s.detail === false ? 'summary view' : 'read-only view';
    $('store-kind').textContent = s.store.kind + (s.store.reachable ? ' reachable' : ' UNREACHABLE');
    $('store-dot').className = 'dot ' + (s.store.reachable ? 'ok' : 'critical');
    $('store-detail').textContent = s.store.reachable ? 'ping ' + s.store.latencyMs + ' ms' : 'error ' + (s.store.error || '?');
    $('store-card').dataset.reachable = String(s.store.reachable);

    var seen = new Set();
    s.tags.forEach(function (t) { seen.add(t.tag); renderTag(t); });
    rows.forEach(function (r, tag) { if (!seen.has(tag)) { r.tr.remove(); rows.delete(tag); } });
    $('no-tags').hidden = s.tags.length > 0;
    $('no-tags').textContent = s.detail === false
      ? 'Tags are shown with the admin or the metrics token.'
      : 'No tags yet: a tag appears here once this server has handed out its first ID.';

    var eb = $('errors').tBodies[0];
    eb.textContent = '';
    var codes = Object.keys(s.errors.byCode);
    codes.forEach(function (code) {
      var tr = el('tr');
      tr.dataset.code = code;
      tr.appendChild(el('td', 'tag', code));
      tr.appendChild(el('td', 'num', fmtInt(s.errors.byCode[code])));
      eb.appendChild(tr);
    });
    $('no-errors').hidden = codes.length > 0;

    var rb = $('recent').tBodies[0];
    rb.textContent = '';
    s.errors.recent.forEach(function (e) {
      var tr = el('tr');
      tr.appendChild(el('td', '', new Date(e.at).toLocaleTimeString()));
      tr.appendChild(el('td', 'tag', e.code));
      tr.appendChild(el('td', 'num', e.status));
      tr.appendChild(el('td', 'tag', e.method ? e.method + ' ' + e.path : ''));
      tr.appendChild(el('td', '', e.message || ''));
      rb.appendChild(tr);
    });
    $('recent-note').textContent = s.admin ? '' : 'Requests and messages are shown with the admin token.';
    renderWorkers(s);
    setAll('cover-ok', s.thresholds.coverOkSeconds);
    setAll('cover-critical', s.thresholds.coverCriticalSeconds);
    $('updated').textContent = 'Updated ' + new Date(s.now).toLocaleTimeString() + '.';
  }

  function setAll(cls, text) {
    var list = document.getElementsByClassName(cls);
    for (var i = 0; i < list.length; i++) list[i].textContent = String(text);
  }

  // One row per snowflake id space: the layout it issues in and the worker id it holds.
  function renderWorkers(s) {
    var n = s.workers.length;
    $('workers-count').textContent = n ? n + (n === 1 ? ' worker' : ' workers') : '';
    $('workers').hidden = n === 0;
    $('no-workers').hidden = n > 0;
    var layouts = new Map();
    (s.layouts || []).forEach(function (l) { layouts.set(l.name, l); });
    var body = $('workers').tBodies[0];
    body.textContent = '';
    s.workers.forEach(function (w) {
      var l = layouts.get(w.generator);
      var tr = el('tr');
      tr.dataset.workerId = String(w.workerId);
      var name = el('td', 'layout', w.generator + (l && l.default ? ' (default)' : ''));
      if (l) name.title = l.fields.map(function (f) { return f.name + ' ' + f.bits + ' bits'; }).join(', ') + '; epoch ' + l.epoch;
      tr.appendChild(name);
      tr.appendChild(el('td', 'worker num', w.workerId));
      tr.appendChild(el('td', 'lease', w.leaseExpiresInSeconds === null ? 'no lease (static id)' : 'expires in ' + fmtSeconds(w.leaseExpiresInSeconds)));
      tr.appendChild(el('td', 'ends', w.layoutRemainingSeconds === null ? '-' : fmtSeconds(w.layoutRemainingSeconds)));
      body.appendChild(tr);
    });
  }

  function setConn(text, cls) {
    var c = $('conn');
    c.textContent = text;
    c.className = 'pill pill-' + cls;
  }

  function poll() {
    var headers = { accept: 'application/json' };
    if (token) headers.authorization = 'Bearer ' + token;
    fetch('/v1/status', { headers: headers, cache: 'no-store' })
      .then(function (res) {
        if (res.status === 403 && token) {
          token = '';
          sessionStorage.removeItem(TOKEN_KEY);
          $('mode').textContent = 'token rejected';
          return null;
        }
        if (!res.ok) throw new Error('HTTP ' + res.status);
        return res.json();
      })
      .then(function (s) {
        if (s) { render(s); setConn('live', 'ok'); }
      })
      .catch(function (e) { setConn('disconnected: ' + e.message, 'critical'); })
      .then(function () { setTimeout(poll, POLL_MS); });
  }

  $('token-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    token = $('token').value.trim();
    $('token').value = '';
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  });
  $('token-clear').addEventListener('click', function () {
    token = '';
    sessionStorage.removeItem(TOKEN_KEY);
  });
  poll();
})();
`;
