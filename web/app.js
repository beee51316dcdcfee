// SPDX-License-Identifier: GPL-2.0
// kmemd's dashboard: read-only pages over the admin API (docs/dashboard.md),
// refreshed in place every few seconds. Same origin, the browser's operator
// certificate; every value is inserted as text, never as markup.
'use strict';

const REFRESH_MS = 5000;

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
    e.setAttribute(k, v);
  for (const c of children)
    e.append(c instanceof Node ? c : document.createTextNode(c == null ? '' : String(c)));
  return e;
}

function state(word) {
  return el('span', { class: `state-${word}` }, word);
}

function table(caption, heads, rows) {
  return el('table', {}, el('caption', { class: 'numbers' }, caption),
    el('thead', {}, el('tr', {}, ...heads.map(h => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, ...rows.map(r => el('tr', {}, ...r.map(c =>
      c instanceof Node ? el('td', {}, c) : typeof c === 'number' ? el('td', { class: 'num' }, c) : el('td', {}, c))))));
}

// counts of hosts by a key, most common first
function tally(hosts, key) {
  const m = new Map();
  for (const h of hosts)
    m.set(key(h), (m.get(key(h)) || 0) + 1);
  return [...m.entries()].sort((a, b) => b[1] - a[1]);
}

async function fleet() {
  const hosts = await api('/v1/hosts');
  const policy = h => h.policy && h.policy.name ? `${h.policy.name}@${h.policy.version}` : 'none';
  const states = new Map();
  for (const h of hosts)
    for (const m of h.mitigations || []) {
      const k = `${m.id}\u0000${m.state}`;
      states.set(k, (states.get(k) || 0) + 1);
    }
  return [
    el('h2', {}, `Fleet: ${hosts.length} hosts`),
    table('hosts by kernel', ['Kernel', 'Hosts'], tally(hosts, h => h.kernel_release)),
    table('hosts by policy', ['Policy', 'Hosts'], tally(hosts, policy)),
    table('mitigation states', ['Mitigation', 'State', 'Hosts'],
      [...states.entries()].sort().map(([k, n]) => { const [id, s] = k.split('\u0000'); return [id, state(s), n]; })),
  ];
}

async function rollouts() {
  const list = await api('/v1/rollouts');
  return [
    el('h2', {}, 'Rollouts'),
    table(`${list.length} rollouts, newest first`, ['Name', 'Policy', 'State', 'Wave', 'Hosts', 'Reason'],
      list.map(r => [el('a', { href: `#/rollouts/${encodeURIComponent(r.name)}` }, r.name),
        `${r.spec.policy}@${r.spec.version}`, state(r.state), `${r.wave + 1}/${r.spec.waves.length}`,
        (r.members || []).reduce((a, b) => a + b, 0), r.reason || ''])),
  ];
}

function numbers(v) {
  const d = v.detail || {}, c = d.canary || {}, b = d.baseline || {};
  const parts = [`canaries: ${(d.canaries || []).length} hosts, ${c.events} lockups in ${Number(c.hours).toPrecision(3)} host-hours`,
    `baselines: ${(d.baselines || []).length} hosts, ${b.events} lockups in ${Number(b.hours).toPrecision(3)} host-hours`];
  if (d.lockup_p !== undefined)
    parts.push(`lockup rate p = ${Number(d.lockup_p).toPrecision(3)}`);
  for (const [probe, o] of Object.entries(d.latency || {}))
    for (const s of ['p99', 'max'])
      if (o[s])
        parts.push(`${probe} ${s}: p = ${Number(o[s].p).toPrecision(3)}, P(slower) = ${Number(o[s].effect).toFixed(2)}`);
  return el('span', { class: 'numbers' }, parts.join('; '));
}

async function rollout(name) {
  const r = await api(`/v1/rollouts/status?name=${encodeURIComponent(name)}`);
  const running = m => m.policy && m.policy.name === r.spec.policy && m.policy.version === r.spec.version;
  return [
    el('h2', {}, `Rollout ${r.name}: ${r.spec.policy}@${r.spec.version} `, state(r.state)),
    el('p', {}, `Wave ${r.wave + 1} of ${r.spec.waves.length}: ${r.reason || ''}`),
    table('waves', ['Wave', 'Hosts reached', 'Running the policy'], r.spec.waves.map((w, k) => {
      const reached = r.members.filter(m => m.wave <= k);
      return [k + 1, reached.length, reached.filter(running).length];
    })),
    table('verdicts, oldest first, with the numbers behind them', ['When', 'Wave', 'Verdict', 'Gate', 'Reason', 'Numbers'],
      r.verdicts.map(v => [new Date(v.ts_ms).toLocaleString(), v.wave + 1, state(v.verdict), v.gate || '-', v.reason, numbers(v)])),
    table('members: a canary is compared with the baselines of its stratum', ['Host', 'Stratum', 'Wave', 'Runs', 'Before'],
      r.members.map(m => [m.host_id, m.stratum, m.wave + 1, m.policy && m.policy.name ? `${m.policy.name}@${m.policy.version}` : 'none',
        m.previous ? `${m.previous.name}@${m.previous.version}` : 'none'])),
  ];
}

async function render() {
  const main = document.getElementById('main');
  const route = location.hash.replace(/^#/, '') || '/';
  let page;
  try {
    if (route === '/rollouts')
      page = await rollouts();
    else if (route.startsWith('/rollouts/'))
      page = await rollout(decodeURIComponent(route.slice('/rollouts/'.length)));
    else
      page = await fleet();
  } catch (e) {
    page = [el('p', { role: 'alert' }, `kmemd did not answer: ${e.message}`)];
  }
  main.replaceChildren(...page);
  document.getElementById('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
}

window.addEventListener('hashchange', render);
render();
setInterval(render, REFRESH_MS);
