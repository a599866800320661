# ruff: noqa: E501  (CSS and JavaScript, kept in their own idiom)
"""The page's inline style and script. The script reads the payload from a JSON element and builds every
row with DOM calls whose data go in as text (textContent, text nodes), never as markup: a trace that holds
`</script>` or `<img onerror=...>` is shown, not run."""

CSS = r"""
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:20px 24px;color:#1d1d1d}
h1{font-size:20px;margin:0 0 4px} h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd;padding-bottom:3px}
h3{font-size:14px;margin:16px 0 6px} .meta{color:#555;font-size:13px} .meta b{color:#222}
.note{background:#fff8e1;border-left:3px solid #ef8f00;padding:4px 8px;margin:6px 0;font-size:13px}
.none{color:#777}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.card{border:1px solid #d8d8d8;border-radius:6px;padding:8px 12px;min-width:220px;max-width:360px}
.card .src{font-weight:600;font-size:15px} .card .rate{font-size:22px;font-weight:600}
.card .id{font-size:12px;color:#666;overflow-wrap:anywhere} .card .t{font-size:12px;margin-top:4px}
.card.control{background:#f6f6f6} .badge{display:inline-block;font-size:11px;padding:0 5px;border-radius:3px;
 background:#eee;color:#444;margin-left:4px;vertical-align:1px} .badge.control{background:#ffe0b2}
.badge.flaky{background:#ffe0b2;color:#7a4a00} .badge.error{background:#ead7f5;color:#5b1a7e}
table{border-collapse:collapse;font-size:13px} th,td{padding:3px 8px;border-bottom:1px solid #eee;
 text-align:left;vertical-align:top} th{background:#f7f7f7;font-weight:600} td.n,th.n{text-align:right;
 font-variant-numeric:tabular-nums;white-space:nowrap}
.pass,.up{color:#2e7d32} .fail,.down{color:#c62828} .error{color:#6a1b9a} .skipped{color:#777} .flakyc{color:#b26a00} .floor.under{color:#c62828}
.scroll{overflow-x:auto;max-width:100%}
.filters{display:flex;flex-wrap:wrap;gap:8px 14px;align-items:center;margin:8px 0;position:sticky;top:0;
 background:#fff;padding:6px 0;z-index:2;border-bottom:1px solid #eee}
.filters label{font-size:13px;color:#444} select,input[type=search]{font:inherit;font-size:13px;padding:2px 4px}
input[type=search]{width:240px} #count{color:#555;font-size:13px}
#more{font:inherit;margin:8px 0;padding:4px 12px;cursor:pointer}
#cases{width:100%;table-layout:fixed} .more{font-size:12px;color:#8e1b1b;white-space:nowrap} #cases tbody tr.row{cursor:pointer} #cases tbody tr.row:hover{background:#f3f7ff}
#cases tr.row.open{background:#eef3fd} #cases th.sort{cursor:pointer;white-space:nowrap}
#cases th.sort::after{content:" \2195";color:#aaa}
td.case{overflow-wrap:anywhere;min-width:180px} td.why{color:#555;font-size:12px;max-width:520px;overflow-wrap:anywhere}
.chk{display:inline-block;margin:0 6px 2px 0;font-size:12px;background:#fdecea;color:#8e1b1b;border-radius:3px;padding:0 4px}
.tag{display:inline-block;margin:0 4px 2px 0;font-size:11px;background:#eef;color:#335;border-radius:3px;padding:0 4px}
tr.detail>td{background:#fbfbfb;padding:10px 14px;border-bottom:2px solid #c9d6ee}
.attempts button{font:inherit;font-size:12px;margin:0 4px 6px 0;padding:2px 8px;border:1px solid #bbb;
 background:#fff;border-radius:4px;cursor:pointer} .attempts button.sel{border-color:#1565c0;background:#e3ecfa}
.gate{margin:6px 0 10px;border-left:4px solid #c62828;padding-left:8px} .gate h4{margin:4px 0;font-size:13px}
.gate.hard h4{color:#a31515} .gate.soft{border-left-color:#1565c0} .gate.soft h4{color:#0d47a1} .gate table{width:100%}
.turn{border-left:3px solid #cfd8dc;margin:8px 0;padding:2px 0 2px 10px} .turn>.th{font-weight:600;font-size:12px;color:#546e7a}
.agents{margin:6px 0} .agent{font-size:13px;padding:1px 0} .agent.bad{color:#b71c1c;font-weight:600} .via{color:#78909c;font-size:12px}
.byagent{border-left:3px solid #90caf9;margin:6px 0;padding:2px 0 2px 8px} .byagent.bad{border-left-color:#e53935}
.byagent>.ah{font-size:12px;font-weight:600;color:#1565c0} .byagent.bad>.ah{color:#b71c1c}
.msg{margin:4px 0;padding:4px 8px;border-radius:4px;white-space:pre-wrap;overflow-wrap:anywhere}
.msg.user{background:#e3f2fd} .msg.assistant{background:#f1f8e9} .msg.system{background:#eceff1}
.msg .role{font-size:11px;font-weight:600;color:#555;display:block}
.tool{margin:4px 0;padding:4px 8px;border:1px solid #d7ccc8;border-radius:4px;background:#fffdf7}
.tool .name{font-weight:600;font-family:ui-monospace,Menlo,Consolas,monospace}
.tool.err{border-color:#e57373;background:#fff5f5} .tool .lab{font-size:11px;color:#777;margin-top:2px}
pre{margin:2px 0;white-space:pre-wrap;overflow-wrap:anywhere;font:12px/1.35 ui-monospace,Menlo,Consolas,monospace;
 max-height:320px;overflow:auto;background:#f6f6f6;padding:4px 6px;border-radius:3px}
.llm{font-size:11px;color:#777;margin:2px 0} .state table{margin:4px 0 8px}
.trend-box{display:inline-block;vertical-align:top;margin:0 24px 12px 0}
svg text{font:12px system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;fill:#333}
ul.flips li.down{color:#c62828} ul.flips li.up{color:#2e7d32} ul.flips b{color:#222}
table.cmp tr.flip.down td:first-child{border-left:3px solid #c62828} table.cmp tr.flip.up td:first-child{border-left:3px solid #2e7d32}
table.cmp.changed-only tr.same{display:none} label.inline{font-size:13px}
ul.verdicts{margin:4px 0 8px;padding-left:20px;font-size:13px} ul.verdicts li.v-regression{color:#c62828;font-weight:600}
ul.verdicts li.v-improvement{color:#2e7d32} ul.verdicts li.v-noise,ul.verdicts li.v-unchanged{color:#555}
ul.verdicts li.v-under-floor{color:#c62828;font-weight:600} table.cmp tr.v-under-floor td:nth-child(11){color:#c62828;font-weight:600}
section.verdict{margin:12px 0 18px;padding:10px 14px 8px;border-radius:6px;border:2px solid #2e7d32;background:#f1f8f1}
section.verdict.fail{border-color:#c62828;background:#fdf0ef} section.verdict h2{margin:0 0 4px;border:0;font-size:19px}
section.verdict.pass h2{color:#1b5e20} section.verdict.fail h2{color:#b71c1c}
section.verdict .run{margin:8px 0;padding-left:8px;border-left:4px solid #2e7d32} section.verdict .run.fail{border-left-color:#c62828}
section.verdict .run .head{font-weight:600} section.verdict ul.problems{margin:4px 0;padding-left:20px;font-size:13px}
section.verdict ul.problems li{overflow-wrap:anywhere} section.verdict .ctx{color:#555;font-size:12px;margin:2px 0}
table.cmp tr.v-regression td{background:#fdecea} table.cmp tr.v-improvement td{background:#e8f5e9} p.flaky{margin:2px 0;font-size:13px}
"""

JS = r"""
(function () {
'use strict';
var T0 = performance.now();
var P = JSON.parse(document.getElementById('kit-data').textContent);
var S = P.S, RUNS = P.runs, ROWS = P.rows, TRACES = P.traces;
function h(tag, props) {
  var e = document.createElement(tag);
  if (props) for (var k in props) {
    var v = props[k];
    if (v == null) continue;
    if (k === 'class') e.className = v; else if (k.slice(0, 5) === 'data-') e.setAttribute(k, v);
    else e[k] = v;
  }
  for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
  return e;
}
function add(e) {
  for (var i = 1; i < arguments.length; i++) {
    var kid = arguments[i];
    if (kid == null || kid === false) continue;
    if (Array.isArray(kid)) { kid.forEach(function (x) { add(e, x); }); continue; }
    e.appendChild(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
}
// Checks arrive as [name, gate, outcome letter, reason, score, threshold, traceback], trailing empties dropped.
var OUT = {p: 'pass', f: 'fail', e: 'error', s: 'skipped'};
// Attempts share identical result lists (P.checks); each list is decoded once.
var CHECKS = P.checks.map(function (list) { return list.map(function (c) {
  return [c[0], c[1], OUT[c[2]] || c[2], c[4] == null ? null : c[4], c[3] == null ? -1 : c[3],
          c[5] == null ? null : c[5], c[6] == null ? -1 : c[6]];
}); });
ROWS.forEach(function (r) { r.att.forEach(function (a) { a.ch = CHECKS[a.ch]; }); });
function s(i) { return i == null || i < 0 ? '' : S[i]; }
function num(v, d) { return v == null ? '-' : Number(v).toFixed(d); }
function json(v) { return typeof v === 'string' ? v : JSON.stringify(v, null, 2); }
function src(r) { return RUNS[r.r].src; }

// ---- filters
var $src = document.getElementById('f-source'), $out = document.getElementById('f-outcome'),
    $chk = document.getElementById('f-check'), $tag = document.getElementById('f-tag'),
    $flaky = document.getElementById('f-flaky'), $q = document.getElementById('f-search'),
    $count = document.getElementById('count'), $body = document.getElementById('case-body');
function options(sel, values) { values.forEach(function (v) { sel.appendChild(h('option', {value: v}, v)); }); }
function uniq(a) { return Array.from(new Set(a)).sort(); }
options($src, uniq(RUNS.map(function (r) { return r.src; })));
options($chk, uniq([].concat.apply([], ROWS.map(function (r) { return r.fc.map(s); }))));
options($tag, uniq([].concat.apply([], ROWS.map(function (r) { return r.tags; }))));

function outcome(r) { return r.c === r.n ? 'pass' : (r.c === 0 ? 'fail' : 'flaky'); }
ROWS.forEach(function (r) {
  var run = RUNS[r.r];
  r.text = [r.id, run.src, run.id, run.model || '', run.agent || '', r.tags.join(' '),
            r.fc.map(s).join(' '), s(r.why)].join('\n').toLowerCase();
});

function matches(r) {
  var o = $out.value, c = $chk.value, t = $tag.value, q = $q.value.trim().toLowerCase();
  if ($src.value && src(r) !== $src.value) return false;
  if (o === 'failing' && r.c === r.n) return false;
  if (o === 'error' && !r.err) return false;
  if (o !== '' && o !== 'failing' && o !== 'error' && outcome(r) !== o) return false;
  if ($flaky.checked && !r.fl) return false;
  if (c && !r.fc.some(function (i) { return S[i] === c; })) return false;
  if (t && r.tags.indexOf(t) < 0) return false;
  if (q && r.text.indexOf(q) < 0) return false;
  return true;
}
// At most LIMIT rows are laid out at once (the page opens fast with a red team of hundreds of cases);
// a button shows the rest. Rows are built the first time they are shown.
var LIMIT = 100, showAll = false, $more = document.getElementById('more');
function apply() {
  var frag = document.createDocumentFragment(), matched = 0, shown = 0;
  ROWS.forEach(function (r) {
    if (!matches(r)) return;
    matched++;
    if (!showAll && shown >= LIMIT) return;
    shown++;
    frag.appendChild(r.tr || row(r));
    if (r.detail && r.tr.classList.contains('open')) frag.appendChild(r.detail);
  });
  $body.replaceChildren(frag);
  $count.textContent = (shown < matched ? shown + ' shown of ' : '') + matched + ' matching of ' + ROWS.length + ' case rows';
  $more.hidden = shown === matched;
  $more.textContent = 'show all ' + matched;
}
$more.addEventListener('click', function () { showAll = true; apply(); });
[$src, $out, $chk, $tag, $flaky].forEach(function (e) { e.addEventListener('change', apply); });
$q.addEventListener('input', apply);

// ---- rows
var CHIPS = 5;  // failing checks named in a row; the rest in a tooltip and in the opened row
function row(r) {
  var run = RUNS[r.r], o = outcome(r);
  var flags = [r.fl ? h('span', {class: 'badge flaky'}, 'flaky') : null,
               r.err ? h('span', {class: 'badge error'}, r.err + ' error' + (r.err > 1 ? 's' : '')) : null,
               run.control ? h('span', {class: 'badge control', title: 'a deliberately vulnerable target: must fail, not gated'}, 'control') : null];
  var tr = h('tr', {class: 'row', tabIndex: 0, 'data-outcome': o, 'data-source': run.src},
    h('td', null, run.src, h('div', {class: 'meta'}, run.model || run.agent || '')),
    h('td', {class: 'case'}, r.id, h('div', null, r.tags.map(function (t) { return h('span', {class: 'tag'}, t); }))),
    h('td', {class: 'n ' + (o === 'flaky' ? 'flakyc' : o)}, r.c + '/' + r.n, floor(r)),
    h('td', {class: 'n'}, num(r.phk, 2)),
    h('td', null, flags),
    h('td', {class: 'why'}, r.fc.slice(0, CHIPS).map(function (i) { return h('span', {class: 'chk'}, S[i]); }),
      r.fc.length > CHIPS ? h('span', {class: 'more', title: r.fc.slice(CHIPS).map(s).join(', ')}, '+' + (r.fc.length - CHIPS) + ' more') : null,
      r.why >= 0 ? h('div', null, s(r.why)) : null));
  tr.addEventListener('click', function () { toggle(r); });
  tr.addEventListener('keydown', function (ev) { if (ev.key === 'Enter') toggle(r); });
  r.tr = tr;
  return tr;
}
// The floor the run recorded for the case, beside its pass fraction; under it, the case fails its gate.
function floor(r) {
  if (r.flo == null) return null;
  var under = r.c / r.n < r.flo;
  return h('div', {class: 'meta floor' + (under ? ' under' : ''), title: 'the case\u2019s floor, as the run recorded it'},
    num(r.c / r.n, 2) + (under ? ' < ' : ' \u2265 ') + 'floor ' + num(r.flo, 2));
}
function toggle(r) {
  var open = !r.tr.classList.contains('open');
  r.tr.classList.toggle('open', open);
  if (open) {
    r.detail = r.detail || h('tr', {class: 'detail'}, h('td', {colSpan: 6}, detail(r)));
    r.tr.parentNode.insertBefore(r.detail, r.tr.nextSibling);
  } else if (r.detail && r.detail.parentNode) {
    r.detail.parentNode.removeChild(r.detail);
  }
}

// ---- sort
var KEYS = {source: function (r) { return src(r); }, 'case': function (r) { return r.id; },
  passed: function (r) { return r.c / r.n; }, phk: function (r) { return r.phk == null ? -1 : r.phk; }};
var sortState = {key: null, dir: 1};
Array.prototype.forEach.call(document.querySelectorAll('#cases th.sort'), function (th) {
  th.addEventListener('click', function () {
    var k = th.getAttribute('data-key');
    sortState = {key: k, dir: sortState.key === k ? -sortState.dir : 1};
    var f = KEYS[k];
    ROWS.sort(function (a, b) { var x = f(a), y = f(b); return (x < y ? -1 : x > y ? 1 : 0) * sortState.dir; });
    apply();
  });
});

// ---- the detail of one case row
function detail(r) {
  var box = h('div', {class: 'detail-box'}), nav = h('div', {class: 'attempts'}), pane = h('div');
  var first = r.att.findIndex(function (a) { return !a.ok; });
  r.att.forEach(function (a, i) {
    var b = h('button', {type: 'button', class: a.ok ? 'pass' : (a.o === 'error' ? 'error' : 'fail')},
      'attempt ' + a.a + ' ' + (a.ok ? '\u2713' : '\u2717') + ' ' + a.o);
    b.addEventListener('click', function (ev) {
      ev.stopPropagation();
      Array.prototype.forEach.call(nav.children, function (x) { x.classList.remove('sel'); });
      b.classList.add('sel');
      pane.replaceChildren(attempt(r, a));
    });
    nav.appendChild(b);
  });
  var pick = first < 0 ? 0 : first;
  if (nav.children[pick]) nav.children[pick].classList.add('sel');
  if (r.att[pick]) pane.appendChild(attempt(r, r.att[pick]));
  add(box, [h('div', {class: 'meta'}, 'run ', h('b', null, RUNS[r.r].id), ' \u00b7 agent ', RUNS[r.r].agent || '-',
    ' \u00b7 model ', RUNS[r.r].model || '-', ' \u00b7 git ', RUNS[r.r].git || '-'), nav, pane]);
  box.addEventListener('click', function (ev) { ev.stopPropagation(); });
  return box;
}
function attempt(r, a) {
  var el = h('div', {class: 'attempt'});
  add(el, h('div', {class: 'meta'}, 'outcome ', h('b', {class: a.o}, a.o), ' \u00b7 steps ', a.st == null ? '-' : a.st,
    ' \u00b7 tokens ', a.tk == null ? '-' : a.tk, ' \u00b7 cost ', a.co == null ? 'not recorded' : '$' + num(a.co, 4), ' \u00b7 latency ',
    a.la == null ? '-' : a.la + ' ms'));
  if (a.e) add(el, h('div', {class: 'tool err'}, h('div', {class: 'lab'}, 'error'), h('pre', null, a.e)));
  var hard = a.ch.filter(function (c) { return c[1] === 'h'; }), soft = a.ch.filter(function (c) { return c[1] === 's'; });
  add(el, gate('hard', 'Hard gates: deterministic checks (' + hard.length + ')', hard));
  if (soft.length) add(el, gate('soft', 'Soft gates: judged rubrics (' + soft.length + ')', soft));
  if (a.j.length) add(el, judges(a.j));
  add(el, trace(a.t >= 0 ? TRACES[a.t] : null, a.tl || [], failingAgents(a.ch, r.ho)));
  return el;
}
function gate(kind, title, checks) {
  var order = {error: 0, fail: 1, skipped: 2, pass: 3};
  checks = checks.slice().sort(function (x, y) { return (order[x[2]] || 0) - (order[y[2]] || 0); });
  var body = checks.map(function (c) {
    return h('tr', {class: 'check'}, h('td', null, S[c[0]]), h('td', {class: c[2]}, c[2]),
      kind === 'soft' ? h('td', {class: 'n'}, num(c[3], 2) + (c[5] != null ? ' / ' + num(c[5], 2) : '')) : null,
      h('td', {class: 'why'}, s(c[4]), c[6] >= 0 ? h('details', null, h('summary', null, 'traceback'), h('pre', null, s(c[6]))) : null));
  });
  return h('div', {class: 'gate ' + kind}, h('h4', null, title), checks.length ? h('table', null,
    h('tr', null, h('th', null, 'check'), h('th', null, 'outcome'), kind === 'soft' ? h('th', {class: 'n'}, 'score / threshold') : null,
      h('th', null, 'reason')), body) : h('div', {class: 'none'}, 'none recorded'));
}
function judges(list) {
  return h('div', {class: 'gate soft'}, h('h4', null, 'Judge calls (' + list.length + ')'), h('table', null,
    h('tr', null, ['check', 'judge model', 'rubric hash', 'score', 'outcome', 'raw answer'].map(function (x) { return h('th', null, x); })),
    list.map(function (j) {
      return h('tr', {class: 'judge'}, h('td', null, S[j[0]]), h('td', null, j[1] || '-'), h('td', null, j[2] || '-'),
        h('td', {class: 'n'}, num(j[3], 2)), h('td', {class: j[4]}, j[4] || '-'), h('td', null, h('pre', null, s(j[5]))));
    })));
}
// The agents a failed check names: a check scoped to an agent says so first in its reason ("agent billing: ..."),
// and a `handoff` check (by its type, whatever its name: `ho`, from the run's case definitions) holds its `from`
// to account. Only where the definitions are unknown (`ho` null) is a handoff check told by its default name.
function failingAgents(checks, ho) {
  var out = {};
  (checks || []).forEach(function (c) {
    if (c[2] === 'pass') return;
    var m = /^agent (.+?): /.exec(s(c[4]));
    var from = m ? m[1] : ho ? ho[c[0]] : (/^handoff:([^>@#]+)>/.exec(S[c[0]]) || [])[1];
    if (from) out[from] = true;
  });
  return out;
}
function agentTree(t, bad) {
  var order = [], parent = {}, via = {};
  (t.agents || []).forEach(function (a) { order.push(a.name); parent[a.name] = a.parent; via[a.name] = a.via; });
  (t.spans || []).forEach(function (sp) { if (sp.agent && order.indexOf(sp.agent) < 0) order.push(sp.agent); });
  (t.handoffs || []).forEach(function (ho) {
    [ho.from, ho.to].forEach(function (n) { if (order.indexOf(n) < 0) order.push(n); });
    if (!(ho.to in parent) && ho.to !== order[0]) { parent[ho.to] = ho.from; via[ho.to] = ho.via; }
  });
  if (!order.length) return null;
  function depth(n) { var d = 0; while (parent[n] && d < order.length) { n = parent[n]; d++; } return d; }
  return h('div', {class: 'agents'}, h('div', {class: 'lab'}, h('b', null, 'agents')), order.map(function (n) {
    return h('div', {class: 'agent' + (bad[n] ? ' bad' : ''), style: 'margin-left:' + 16 * depth(n) + 'px'},
      (parent[n] ? '\u21b3 ' : '') + n, parent[n] ? h('span', {class: 'via'}, ' (' + (via[n] || 'handoff') + ' from ' + parent[n] + ')') : null,
      bad[n] ? h('span', {class: 'badge error'}, 'failing') : null);
  }), (t.handoffs || []).map(function (ho) {
    return h('div', {class: 'via'}, 'handoff: ' + ho.from + ' \u2192 ' + ho.to + ' (' + (ho.via || 'handoff') + ', after step ' + ho.at + ')');
  }));
}
function trace(t, tl, bad) {
  var el = h('div', {class: 'trace'}, h('h4', null, 'Trace'));
  if (!t) { add(el, h('div', {class: 'none'}, 'no trace stored for this run')); return el; }
  bad = bad || {};
  var tree = agentTree(t, bad);
  if (tree) add(el, tree);
  (t.notes || []).forEach(function (n) { add(el, h('div', {class: 'note'}, n)); });
  add(el, h('div', {class: 'meta'}, 'finish reason ', h('b', null, t.finish_reason || '-'), ' \u00b7 model ', t.model || '-',
    tl[0] != null ? ' \u00b7 latency ' + tl[0] + ' ms' : ''));
  var turns = [], cur = null, userSeen = false;
  (t.spans || []).forEach(function (sp, i) {
    if (tl[i + 1] != null) sp = Object.assign({}, sp, {latency_ms: tl[i + 1]});
    var n = sp.turn;
    if (n == null) { if (sp.kind === 'message' && sp.role === 'user' && userSeen) n = (cur ? cur.n : 0) + 1; else n = cur ? cur.n : 0; }
    if (sp.kind === 'message' && sp.role === 'user') userSeen = true;
    if (!cur || cur.n !== n) { cur = {n: n, spans: []}; turns.push(cur); }
    cur.spans.push(sp);
  });
  turns.forEach(function (tu) {
    // Each call under its agent: a run of spans of one agent is one block, headed by the agent's name.
    var blocks = [], blk = null;
    tu.spans.forEach(function (sp) {
      if (!blk || blk.agent !== (sp.agent || null)) { blk = {agent: sp.agent || null, spans: []}; blocks.push(blk); }
      blk.spans.push(sp);
    });
    add(el, h('div', {class: 'turn'}, h('div', {class: 'th'}, 'turn ' + tu.n), blocks.map(function (b) {
      if (!b.agent) return b.spans.map(span);
      return h('div', {class: 'byagent' + (bad[b.agent] ? ' bad' : '')}, h('div', {class: 'ah'}, 'agent ' + b.agent,
        bad[b.agent] ? h('span', {class: 'badge error'}, 'failing') : null), b.spans.map(span));
    })));
  });
  if (t.final_output != null) add(el, h('div', {class: 'lab'}, h('b', null, 'final output')), h('pre', {class: 'final'}, json(t.final_output)));
  if (t.end_state && typeof t.end_state === 'object') add(el, endState(t.end_state));
  else if (t.end_state != null) add(el, h('div', {class: 'lab'}, h('b', null, 'end state')), h('pre', null, json(t.end_state)));
  if (t.raw) add(el, h('pre', null, t.raw));
  return el;
}
function span(sp) {
  if (sp.kind === 'message') {
    var role = sp.role || 'message';
    return h('div', {class: 'msg ' + role}, h('span', {class: 'role'}, role), sp.content == null ? '' : json(sp.content));
  }
  if (sp.kind === 'tool') {
    return h('div', {class: 'tool' + (sp.error != null ? ' err' : '')}, h('span', {class: 'name'}, sp.name || '(unnamed tool)'),
      sp.latency_ms != null ? h('span', {class: 'llm'}, ' \u00b7 ' + sp.latency_ms + ' ms') : null,
      h('div', {class: 'lab'}, 'arguments'), h('pre', {class: 'args'}, json(sp.input == null ? {} : sp.input)),
      h('div', {class: 'lab'}, 'result'), h('pre', {class: 'result'}, sp.output === undefined ? '-' : json(sp.output)),
      sp.error != null ? [h('div', {class: 'lab'}, 'error'), h('pre', {class: 'error'}, json(sp.error))] : null);
  }
  var bits = ['llm', sp.name || ''];
  if (sp.tokens_in || sp.tokens_out) bits.push((sp.tokens_in || 0) + '+' + (sp.tokens_out || 0) + ' tokens');
  if (sp.cost_usd) bits.push('$' + num(sp.cost_usd, 4));
  if (sp.latency_ms) bits.push(sp.latency_ms + ' ms');
  return h('div', {class: 'llm'}, bits.filter(Boolean).join(' \u00b7 '));
}
function endState(state) {
  var el = h('div', {class: 'state'}, h('h4', null, 'End state'));
  Object.keys(state).forEach(function (name) {
    var rows = P.tables[state[name]];  // each table is stored once in P.tables
    add(el, h('div', {class: 'lab'}, h('b', null, name)));
    if (!Array.isArray(rows)) { add(el, h('pre', null, json(rows))); return; }
    if (!rows.length) { add(el, h('div', {class: 'none'}, '(no rows)')); return; }
    var cols = uniq([].concat.apply([], rows.map(function (x) { return x && typeof x === 'object' ? Object.keys(x) : []; })));
    add(el, h('table', null, h('tr', null, cols.map(function (c) { return h('th', null, c); })),
      rows.map(function (x) { return h('tr', null, cols.map(function (c) { var v = x ? x[c] : null; return h('td', null, v == null ? '' : json(v)); })); })));
  });
  return el;
}

// ---- side by side: changed cases only
var cmpBox = document.getElementById('cmp-changed');
if (cmpBox) cmpBox.addEventListener('change', function () {
  document.getElementById('cmp-table').classList.toggle('changed-only', cmpBox.checked);
});

apply();
// How long this script took to parse the data and lay out the table (a test reads it).
document.body.setAttribute('data-render-ms', String(Math.round(performance.now() - T0)));
})();
"""
