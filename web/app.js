// SPDX-License-Identifier: GPL-2.0
// kmemd's dashboard: read-only pages over the admin API (docs/dashboard.md),
// refreshed in place every few seconds. Same origin, the browser's operator
// certificate; every value is inserted as text, never as markup. Charts are
// uPlot (uplot.min.js, vendored at build time).
'use strict';

const REFRESH_MS = 5000;
const HOSTS_PAGE = 100;
// a large rollout's members: the status sends the first ones shown; its
// wave_hosts count them all for the waves table
const MEMBERS_SHOWN = 500;
const CANARY = '#c2410c', BASELINE = '#1d4ed8';

async function api(path) {
  const r = await fetch(path, { headers: { Accept: 'application/json' } });
  if (!r.ok)
    throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

// el('td', {class: 'num'}, 'text', child...): an element with attributes and children
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {}))
    if (v !== undefined)
      e.setAttribute(k, v);
  for (const c of children.flat())
    e.append(c instanceof Node ? c : document.createTextNode(c == null ? '' : String(c)));
  return e;
}

function state(word) {
  return el('span', { class: `state-${word}` }, word);
}

// a cell: a node as is, a number right-aligned; [value, key] also sets data-k
// for the tests to find the number by what it is
function cell(c) {
  const [v, key] = Array.isArray(c) ? c : [c, undefined];
  if (v instanceof Node)
    return el('td', { 'data-k': key }, v);
  return el('td', { class: typeof v === 'number' ? 'num' : undefined, 'data-k': key }, v);
}

function table(caption, heads, rows, attrs) {
  return el('table', attrs || {}, el('caption', {}, caption),
    el('thead', {}, el('tr', {}, heads.map(h => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, rows.map(r => el('tr', {}, r.map(cell)))));
}

const fmt = {
  p: x => Number(x).toPrecision(3),
  hours: x => Number(x).toPrecision(3),
  time: ms => ms ? new Date(ms).toLocaleString() : '-',
  ns(ns) {
    if (ns == null)
      return '-';
    if (ns >= 1e9)
      return `${(ns / 1e9).toPrecision(3)} s`;
    if (ns >= 1e6)
      return `${(ns / 1e6).toPrecision(3)} ms`;
    return ns >= 1e3 ? `${(ns / 1e3).toPrecision(3)} µs` : `${ns} ns`;
  },
  bytes: b => b >= 2 ** 30 ? `${(b / 2 ** 30).toFixed(1)} GiB` : `${Math.round(b / 2 ** 20)} MiB`,
  policy: p => p && p.name ? `${p.name}@${p.version}` : 'none',
  // what holds a host's mitigations off, as its last report said
  off: o => ({ none: 'no', cmdline: 'kmemctl.disable=1', local: 'local kill switch', 'fleet-stop': 'fleet stop' })[o] || 'not reported',
};

// The fleet stop, when it holds: what every page says first.
function stopBanner(stop) {
  if (!stop || !stop.stopped)
    return [];
  return [el('p', { role: 'alert', class: 'stopped', id: 'fleet-stop' },
    'The fleet is stopped: every agent holds every mitigation off (by ', stop.by || '?', ', ',
    fmt.time(stop.since_ms), stop.reason ? `: ${stop.reason}` : '', '). kmemctl fleet resume lifts it.')];
}

function hostLink(id) {
  return el('a', { href: `#/hosts/${encodeURIComponent(id)}` }, id);
}

// A chart: x in unix seconds, one line per series; its numbers also go into
// the figure's label for readers without the canvas.
function chart(title, t, series, yfmt) {
  const fig = el('figure', { class: 'chart' }, el('figcaption', {}, title));
  const last = series.map(s => {
    const v = [...s.values].reverse().find(x => x != null);
    return `${s.label} ${v == null ? 'no data' : yfmt(v)}`;
  });
  fig.setAttribute('role', 'img');
  fig.setAttribute('aria-label', `${title}: last ${last.join(', ')}`);
  if (typeof uPlot === 'undefined')
    return fig;
  const opts = {
    width: Math.min(860, Math.max(320, (document.getElementById('main').clientWidth || 900) - 40)),
    height: 200,
    legend: { live: true },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true } },
    axes: [{}, { values: (u, vals) => vals.map(v => yfmt(v)), size: 70 }],
    series: [{}, ...series.map(s => ({
      label: s.label, stroke: s.color, width: 2, dash: s.dash, spanGaps: true,
      value: (u, v) => v == null ? '-' : yfmt(v),
    }))],
  };
  fig.append(el('div', { class: 'plot' }));
  requestAnimationFrame(() => new uPlot(opts, [t.map(ms => ms / 1000), ...series.map(s => s.values)],
    fig.querySelector('.plot')));
  return fig;
}

// cumulative lockups per host-hour: the rate the lockup gate compares
function rate(side) {
  let n = 0, h = 0;
  return side.lockups.map((x, i) => {
    n += x;
    h += side.hours[i];
    return h > 0 ? n / h : null;
  });
}

function seriesCharts(s, label) {
  const sides = s.sides;
  const color = i => sides.length === 1 ? CANARY : i === 0 ? CANARY : BASELINE;
  const out = [];
  const quiet = [];
  for (const probe of s.probes) {
    if (sides.every(d => d.probes[probe].count.every(n => !n))) {
      quiet.push(probe);
      continue;
    }
    const lines = [];
    sides.forEach((d, i) => {
      lines.push({ label: `${d.name} p99`, color: color(i), values: d.probes[probe].p99_ns });
      lines.push({ label: `${d.name} p50`, color: color(i), dash: [4, 4], values: d.probes[probe].p50_ns });
    });
    out.push(chart(`${probe}: ${label} quantiles`, s.t, lines, fmt.ns));
  }
  if (quiet.length)
    out.push(el('p', { class: 'numbers' }, `no samples in this window: ${quiet.join(', ')}`));
  out.push(chart(`lockups per host-hour, cumulative: ${label}`, s.t,
    sides.map((d, i) => ({ label: d.name, color: color(i), values: rate(d) })), v => Number(v).toPrecision(2)));
  const totals = sides.map(d => [d.name, d.hosts, [d.lockups.reduce((a, b) => a + b, 0), `lockups-${d.name}`],
    fmt.hours(d.hours.reduce((a, b) => a + b, 0))]);
  out.push(table(`over the charts' window, ${fmt.time(s.from_ms)} to ${fmt.time(s.to_ms)}`,
    ['Side', 'Hosts', 'Lockups', 'Host-hours'], totals));
  return out;
}

// The hosts page: a page of hosts from a search, linked to their details.
async function hostList(params) {
  const match = params.get('match') || '', after = params.get('after') || '';
  const q = new URLSearchParams({ limit: HOSTS_PAGE });
  if (match)
    q.set('match', match);
  if (after)
    q.set('after', after);
  const hosts = await api(`/v1/hosts?${q}`);
  const search = el('input', { type: 'search', id: 'match', value: match, 'aria-label': 'host, hostname or kernel contains' });
  const form = el('form', { role: 'search', class: 'search' }, el('label', { for: 'match' }, 'Find hosts '), search);
  // the search is the page's address, not a form sent anywhere
  form.addEventListener('submit', e => {
    e.preventDefault();
    location.hash = `#/?${new URLSearchParams(search.value ? { match: search.value } : {})}`;
  });
  const nav = [];
  if (after)
    nav.push(el('a', { href: `#/?${new URLSearchParams(match ? { match } : {})}` }, 'first page'));
  if (hosts.length === HOSTS_PAGE)
    nav.push(el('a', { href: `#/?${new URLSearchParams({ ...(match ? { match } : {}), after: hosts[hosts.length - 1].host_id })}` }, 'next page'));
  return [
    el('h2', {}, 'Hosts'),
    form,
    table(`${hosts.length} hosts${after ? ` after ${after}` : ''}${match ? ` matching “${match}”` : ''}`,
      ['Host', 'Hostname', 'Kernel', 'Policy', 'Mitigations on', 'Held off', 'Last report'],
      hosts.map(h => [hostLink(h.host_id), h.hostname, h.kernel_release, fmt.policy(h.policy),
        (h.mitigations || []).filter(m => m.state === 'on').map(m => m.id).join(' ') || '-',
        [h.off && h.off !== 'none' ? fmt.off(h.off) : '-', `off-${h.host_id}`], fmt.time(h.last_seen_ms)]),
      { id: 'hosts' }),
    el('p', { class: 'pager' }, nav),
  ];
}

async function fleet(params) {
  const [f, list] = await Promise.all([api('/v1/fleet'), hostList(params)]);
  return [
    ...stopBanner(f.stop),
    el('h2', {}, 'Fleet: ', el('span', { 'data-k': 'hosts' }, f.hosts), ' hosts reporting'),
    el('div', { class: 'cols' },
      table('hosts by kernel', ['Kernel', 'Hosts'], f.kernels.map(([k, n]) => [k, [n, `kernel-${k}`]]), { id: 'kernels' }),
      table('hosts by policy', ['Policy', 'Hosts'],
        f.policies.map(([p, v, n]) => [p ? `${p}@${v}` : 'none', [n, `policy-${p}@${v}`]]), { id: 'policies' }),
      table('hosts per mitigation and state', ['Mitigation', 'State', 'Hosts'],
        f.mitigations.map(([id, s, n]) => [id, state(s), [n, `mitigation-${id}-${s}`]]), { id: 'mitigations' })),
    ...list,
  ];
}

async function rollouts() {
  const list = await api('/v1/rollouts');
  return [
    el('h2', {}, 'Rollouts'),
    table(`${list.length} rollouts, newest first`, ['Name', 'Policy', 'State', 'Wave', 'Hosts', 'Reason'],
      list.map(r => [el('a', { href: `#/rollouts/${encodeURIComponent(r.name)}` }, r.name),
        `${r.spec.policy}@${r.spec.version}`, state(r.state), `${r.wave + 1}/${(r.waves || []).length}`,
        (r.members || []).reduce((a, b) => a + b, 0), r.reason || '']), { id: 'rollouts' }),
  ];
}

// Kernel builds hosts run while their module waits for a build record
// (docs/operations.md, admitting a build), and the records published.
async function builds() {
  const b = await api('/v1/builds');
  const waiting = w => Object.entries(w).map(([m, n]) => `${m}: ${n}`).join(', ') || '-';
  return [
    el('h2', {}, 'Builds'),
    el('p', { id: 'builds-waiting' }, 'Hosts waiting for a build record: ', waiting(b.waiting),
      '. kmemctl build record --build-id ID makes one from kmemd\'s copy of the build file; ',
      'sign it with kmemctl build sign and publish it with kmemctl build publish.'),
    table(`${b.builds.length} builds`, ['Release', 'Build id', 'Hosts', 'Waiting', 'Records', 'Last seen'],
      b.builds.map(x => [x.release, el('code', { title: x.build_id }, x.build_id.slice(0, 12)),
        [x.hosts, `hosts-${x.build_id}`], [waiting(x.waiting), `waiting-${x.build_id}`],
        [x.records, `records-${x.build_id}`], fmt.time(x.last_seen_ms)]), { id: 'builds' }),
  ];
}

// A verdict's numbers, each one findable by the tests as data-k="KEY"; a side's
// host count is its "hosts" (verdicts name at most 100 of them), or in verdicts
// stored before that, the length of its list.
function numbers(v) {
  const d = v.detail || {}, c = d.canary || {}, b = d.baseline || {};
  const n = (key, x) => el('span', { 'data-k': key }, x);
  const parts = [
    ['canaries: ', n('canaries', c.hosts ?? (d.canaries || []).length), ' hosts, ', n('canary-lockups', c.events), ' lockups in ',
      n('canary-hours', fmt.hours(c.hours)), ' host-hours'],
    ['baselines: ', n('baselines', b.hosts ?? (d.baselines || []).length), ' hosts, ', n('baseline-lockups', b.events), ' lockups in ',
      n('baseline-hours', fmt.hours(b.hours)), ' host-hours'],
  ];
  if (d.lockup_p !== undefined)
    parts.push(['lockup rate p = ', n('lockup-p', fmt.p(d.lockup_p))]);
  for (const [probe, o] of Object.entries(d.latency || {}))
    for (const s of ['p99', 'max'])
      if (o[s])
        parts.push([`${probe} ${s}: p = `, n(`${probe}-${s}-p`, fmt.p(o[s].p)), ', P(slower) = ', o[s].effect.toFixed(2)]);
  return el('span', { class: 'numbers' }, parts.map((p, i) => i ? ['; ', ...p] : p).flat());
}

// What the lockup tests had seen at verdict v (docs/rollouts.md, "The statistics"),
// each number findable by the tests as data-k="KEY"; nothing when it compared nothing.
function evidence(v) {
  const e = v && v.detail && v.detail.evidence && v.detail.evidence.lockups;
  if (!e)
    return '';
  const n = (key, x) => el('span', { 'data-k': key }, x);
  const parts = [];
  if (e.mu0 !== undefined)
    parts.push(['expected ', n('expected-lockups', fmt.p(e.mu0)), ' canary lockups against ',
      n('needed-lockups', e.mu_needed == null ? 'none enough' : fmt.p(e.mu_needed)),
      ` needed to detect ${e.detect_ratio}x with power ${e.power}; detectable ratio `,
      n('detectable-ratio', e.detectable_ratio == null ? 'none up to 1000' : fmt.p(e.detectable_ratio))]);
  parts.push(['sequential likelihood ratio ', n('sequential-lr', fmt.p(e.lr)), ' against its threshold ',
    n('sequential-threshold', fmt.p(e.lr_threshold))]);
  return el('p', { id: 'evidence' }, `Evidence at the last verdict (wave ${v.wave + 1}): `,
    parts.map((p, i) => i ? ['; ', ...p] : p).flat());
}

// wave k's start: the pass that ended wave k - 1, or the rollout's record for the wave now
function waveStarts(r) {
  const starts = (r.waves || []).map(() => null);
  for (const v of r.verdicts)
    if (v.verdict === 'pass' && v.wave + 1 < starts.length)
      starts[v.wave + 1] = v.ts_ms;
  starts[r.wave] = r.wave_started_ms;
  return starts;
}

async function rollout(name) {
  const r = await api(`/v1/rollouts/status?name=${encodeURIComponent(name)}&members=${MEMBERS_SHOWN}`);
  // a finished wave is charted over the window of its last verdict
  const last = r.verdicts.filter(v => v.wave === r.wave).pop();
  const finished = ['done', 'rolled-back', 'rolling-back', 'aborted'].includes(r.state);
  const q = new URLSearchParams({ name, wave: r.wave + 1 });
  if (finished && last && last.detail && last.detail.window) {
    q.set('from', last.detail.window.from_ms);
    q.set('to', last.detail.window.to_ms);
  }
  const s = await api(`/v1/rollouts/series?${q}`);
  // wave k reaches the members of waves 1..k; of them, those running the policy
  const upTo = (k, key) => (r.wave_hosts || []).slice(0, k + 1).reduce((a, w) => a + w[key], 0);
  const starts = waveStarts(r);
  const failed = r.verdicts.filter(v => v.verdict === 'fail').pop();
  return [
    el('h2', {}, `Rollout ${r.name}: ${r.spec.policy}@${r.spec.version} `, state(r.state)),
    el('p', {}, `Wave ${r.wave + 1} of ${(r.waves || []).length}: ${r.reason || ''}`),
    failed ? el('div', { class: 'failed', role: 'alert', id: 'failed-gate' },
      el('strong', {}, 'Failed gate: ', el('span', { 'data-k': 'failed-gate' }, failed.gate)),
      ` in wave ${failed.wave + 1} at ${fmt.time(failed.ts_ms)}: `, el('span', { 'data-k': 'failed-reason' }, failed.reason),
      el('br'), numbers(failed)) : '',
    table('waves', ['Wave', 'Started', 'Hosts reached', 'Running the policy', 'Verdicts'], (r.waves || []).map((w, k) => {
      const vs = r.verdicts.filter(v => v.wave === k);
      return [w.release ? `${k + 1} (release)` : k + 1, fmt.time(starts[k]), [upTo(k, 'members'), `reached-${k + 1}`], [upTo(k, 'running'), `running-${k + 1}`],
        vs.length ? state(vs[vs.length - 1].verdict) : '-'];
    }), { id: 'waves' }),
    el('h3', {}, `Wave ${r.wave + 1}: canaries against their baselines (computed ${fmt.time(s.computed_ms)})`),
    el('div', { class: 'charts' }, seriesCharts(s.series, 'canary vs baseline')),
    evidence(r.verdicts[r.verdicts.length - 1]),
    table('verdicts, oldest first, with the numbers behind them', ['When', 'Wave', 'Verdict', 'Gate', 'Reason', 'Numbers'],
      r.verdicts.map(v => [fmt.time(v.ts_ms), v.wave + 1, state(v.verdict), v.gate || '-', v.reason, numbers(v)]),
      { id: 'verdicts' }),
    table(`members in plan order${r.members_total > MEMBERS_SHOWN ? `, the first ${MEMBERS_SHOWN} of ${r.members_total}` : ''}:` +
      ' a canary is compared with the baselines of its stratum', ['Host', 'Stratum', 'Wave', 'Runs', 'Before'],
      r.members.slice(0, MEMBERS_SHOWN).map(m => [hostLink(m.host_id), m.stratum, m.wave + 1, fmt.policy(m.policy),
        m.previous ? fmt.policy(m.previous) : 'none']), { id: 'members' }),
  ];
}

function stackTop(stack) {
  if (!stack.length)
    return '-';
  const top = el('code', {}, stack.slice(0, 3).join(' ← '));
  if (stack.length <= 3)
    return top;
  return el('details', {}, el('summary', {}, top), el('pre', {}, stack.join('\n')));
}

async function host(id) {
  const d = await api(`/v1/hosts/detail?id=${encodeURIComponent(id)}`);
  const h = d.host;
  const facts = [
    ['Hostname', h.hostname], ['Kernel', h.kernel_release], ['Build id', h.build_id],
    ['CPUs online / possible', `${h.online_cpus} / ${h.possible_cpus}`], ['Memory', fmt.bytes(h.mem_total || 0)],
    ['KASAN', h.kasan ? 'yes' : 'no'], ['Module', h.module_version || '-'], ['Policy', fmt.policy(h.policy)],
    ['Labels', Object.entries(h.labels || {}).map(([k, v]) => `${k}=${v}`).join(' ') || '-'],
    ['First report', fmt.time(h.first_seen_ms)], ['Last report', fmt.time(h.last_seen_ms)],
    ['Revoked', h.revoked ? 'yes' : 'no'], ['Held off by', fmt.off(h.off)],
  ];
  return [
    el('h2', {}, `Host ${h.host_id}`),
    el('div', { class: 'cols' },
      el('table', { id: 'facts' }, el('caption', {}, 'facts as last reported'),
        el('tbody', {}, facts.map(([k, v]) => el('tr', {}, el('th', { scope: 'row' }, k), el('td', { 'data-k': k }, v))))),
      table('mitigations', ['Mitigation', 'State', 'Mode', 'Source', 'Reason'],
        (h.mitigations || []).map(m => [m.id, [state(m.state), `state-${m.id}`], m.mode, m.source, m.reason]), { id: 'mitigation-states' })),
    el('h3', {}, 'Probes and lockups'),
    el('div', { class: 'charts' }, seriesCharts(d.series, 'this host')),
    table(`events, newest first (${d.events.length})`, ['When', 'Kind', 'CPU', 'Duration', 'Task', 'Mitigation / probe', 'Message', 'Stack top'],
      d.events.map(e => [fmt.time(e.unix_ms), state(e.kind), e.cpu, fmt.ns(e.duration_ns), e.comm ? `${e.comm}[${e.pid}]` : '-',
        e.mitigation || e.probe || '-', e.message, stackTop(e.stack)]), { id: 'events' }),
  ];
}

// The audit log, newest first, filtered as the hash's query says
// (#/audit?actor=ops). Reading it is itself audited, so the page is read
// when opened, not on every refresh.
async function audit(params) {
  const q = new URLSearchParams();
  for (const k of ['actor', 'action', 'host'])
    if (params.get(k))
      q.set(k, params.get(k));
  q.set('limit', '100');
  const a = await api(`/v1/audit?${q}`);
  const filter = k => v => v ? el('a', { href: `#/audit?${new URLSearchParams({ [k]: v })}` }, v) : '-';
  return [
    el('h2', {}, 'Audit log'),
    el('p', {}, 'Every change made through kmemd, and every read of this log and of the operator ',
      'certificates, with the certificate that made it. Select a name to see only its rows; ',
      el('a', { href: '#/audit' }, 'all rows'), '.'),
    table(`${a.entries.length} rows, newest first${a.next_before == null ? '' : ' (older ones: kmemctl audit list)'}`,
      ['When', 'Actor', 'Action', 'Host', 'Detail'],
      a.entries.map(e => [fmt.time(e.ts_ms), filter('actor')(e.actor), filter('action')(e.action),
        filter('host')(e.host), e.detail]), { id: 'audit' }),
  ];
}

// Who the browser's certificate is, and what its role lets it do, in the header.
async function whoami() {
  const w = await api('/v1/whoami');
  const p = document.getElementById('whoami');
  p.replaceChildren(el('span', { 'data-k': 'name' }, w.name), ' · ',
    el('span', { 'data-k': 'role', class: `role-${w.role}` }, w.role),
    w.may_change ? '' : ' (reads only)');
  p.title = `certificate ${w.fingerprint.slice(0, 16)}, expires ${fmt.time(w.not_after_ms)}`;
}

async function render() {
  const main = document.getElementById('main');
  const [route, query] = (location.hash.replace(/^#/, '') || '/').split('?');
  const params = new URLSearchParams(query || '');
  let page;
  try {
    if (route === '/rollouts')
      page = await rollouts();
    else if (route.startsWith('/rollouts/'))
      page = await rollout(decodeURIComponent(route.slice('/rollouts/'.length)));
    else if (route === '/audit')
      page = await audit(params);
    else if (route === '/builds')
      page = await builds();
    else if (route.startsWith('/hosts/'))
      page = await host(decodeURIComponent(route.slice('/hosts/'.length)));
    else
      page = await fleet(params);
  } catch (e) {
    page = [el('p', { role: 'alert' }, `kmemd did not answer: ${e.message}`)];
  }
  // a refresh keeps the reader where they are
  const y = window.scrollY;
  main.replaceChildren(...page);
  window.scrollTo(0, y);
  document.getElementById('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
  if (!performance.getEntriesByName('kmemctl-rendered').length)
    performance.mark('kmemctl-rendered');
  document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
}

window.addEventListener('hashchange', () => { window.scrollTo(0, 0); render(); });
whoami().catch(e => { document.getElementById('whoami').textContent = `kmemd did not say who you are: ${e.message}`; });
render();
// not while hidden, nor while the operator types a search, nor the audit
// log, whose every read is a row of it
setInterval(() => {
  if (!document.hidden && !(document.activeElement instanceof HTMLInputElement) &&
      !location.hash.startsWith('#/audit'))
    render();
}, REFRESH_MS);
