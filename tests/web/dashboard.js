// SPDX-License-Identifier: GPL-2.0
// The dashboard's pages in Debian's Chromium, driven by playwright-core
// (tests/web/browser.sh sets up kmemd and the fleet). Each page is loaded
// with the operator's certificate; what it shows is compared with what
// the API answers; a screenshot of each goes to $OUT.
//
//   URL=https://127.0.0.1:PORT CA=... CERT=... KEY=... OUT=DIR FLEET=HOSTS \
//     CHROMIUM=/usr/bin/chromium node tests/web/dashboard.js
'use strict';

const path = require('path');
const { env, operatorPage } = require('./operator-page');

const URL = env('URL'), OUT = env('OUT'), FLEET = Number(env('FLEET'));
let failures = 0;

function check(cond, what, detail) {
  if (cond) {
    console.log(`ok: ${what}`);
  } else {
    failures++;
    console.log(`FAIL: ${what}${detail === undefined ? '' : `: ${JSON.stringify(detail)}`}`);
  }
}

const p3 = x => Number(x).toPrecision(3);

async function main() {
  const { browser, page, errors } = await operatorPage();

  const api = p => page.evaluate(async u => {
    const r = await fetch(u);
    return r.json();
  }, p);
  const text = async sel => (await page.locator(sel).first().textContent()).trim();
  const count = sel => page.locator(sel).count();
  async function open(hash) {
    await page.goto('about:blank');
    await page.goto(`${URL}/${hash}`);
    await page.waitForFunction(() => Number(document.body.dataset.rendered) >= 1);
  }
  async function shot(name) {
    // the charts draw on the next frame
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage: true });
  }

  // without the certificate: no dashboard
  const bare = await browser.newContext({ ignoreHTTPSErrors: true });
  const resp = await (await bare.newPage()).goto(`${URL}/`);
  check(resp.status() === 401, 'without a client certificate the dashboard is refused (401)', resp.status());
  await bare.close();

  // fleet: every host in the store, three loads; their times are printed, not
  // judged (this machine's speed is no outcome: bench/dashboard-load.js
  // measures them)
  const paints = [];
  for (let i = 0; i < 3; i++) {
    await open('#/');
    paints.push(await page.evaluate(() => ({
      fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime,
      rendered: performance.getEntriesByName('kmemctl-rendered')[0].startTime,
    })));
  }
  const rendered = paints.map(p => p.rendered).sort((a, b) => a - b)[1];
  console.log(`fleet page, ${FLEET} hosts: first contentful paint ${paints.map(p => Math.round(p.fcp)).join(' ')} ms,` +
    ` numbers drawn ${paints.map(p => Math.round(p.rendered)).join(' ')} ms (median ${Math.round(rendered)} ms)`);
  const fleet = await api('/v1/fleet');
  check(fleet.hosts === FLEET && await text('[data-k="hosts"]') === String(fleet.hosts),
    `fleet shows the API's host count (${fleet.hosts})`, await text('[data-k="hosts"]'));
  for (const [k, n] of fleet.kernels)
    check(await text(`[data-k="kernel-${k}"]`) === String(n), `fleet: ${n} hosts on ${k}`);
  for (const [id, s, n] of fleet.mitigations)
    check(await text(`[data-k="mitigation-${id}-${s}"]`) === String(n), `fleet: ${n} hosts with ${id} ${s}`);
  const first = await api('/v1/hosts?limit=100');
  check(await count('#hosts tbody tr') === first.length && await text('#hosts tbody tr td') === first[0].host_id,
    `fleet lists the first ${first.length} hosts`, await count('#hosts tbody tr'));
  await shot('fleet');

  // a search, typed as an operator would; a mark on the window shows that the page stays
  const stays = () => page.evaluate(() => window.kmemctlTestMark === 1);
  await page.evaluate(() => { window.kmemctlTestMark = 1; });
  await page.fill('#match', 'fleet-0001');
  await page.press('#match', 'Enter');
  const found = await api('/v1/hosts?limit=100&match=fleet-0001');
  await page.waitForFunction(n => location.hash.includes('match=fleet-0001') &&
    document.querySelectorAll('#hosts tbody tr').length === n, found.length);
  check(found.length === 10 && await text('#hosts tbody tr td') === found[0].host_id && await stays(),
  'a search lists the hosts the API finds, without leaving the page', found.length);

  // rollouts
  await open('#/rollouts');
  const list = await api('/v1/rollouts');
  check(await count('#rollouts tbody tr') === list.length, `rollouts lists ${list.length} rollouts`);
  for (const r of list)
    check(await page.locator('#rollouts tbody tr', { hasText: r.name }).locator(`.state-${r.state}`).count() === 1,
      `rollout ${r.name} is shown ${r.state}`);
  await shot('rollouts');

  // the failed rollout: its failing gate and that verdict's numbers
  const bad = await api('/v1/rollouts/status?name=bad');
  const fail = bad.verdicts.filter(v => v.verdict === 'fail').pop();
  await open('#/rollouts/bad');
  await page.waitForFunction(() => document.querySelectorAll('.uplot canvas').length >= 2);
  check(fail && await text('[data-k="failed-gate"]') === fail.gate, `bad shows its failed gate (${fail && fail.gate})`,
    await text('[data-k="failed-gate"]'));
  check(await text('#failed-gate [data-k="failed-reason"]') === fail.reason, 'bad shows the failed verdict\'s reason');
  const d = fail.detail;
  const shown = {
    'canary-lockups': String(d.canary.events), 'canary-hours': p3(d.canary.hours),
    'baseline-lockups': String(d.baseline.events), 'baseline-hours': p3(d.baseline.hours),
    canaries: String(d.canary.hosts), baselines: String(d.baseline.hosts),
  };
  if (d.lockup_p !== undefined)
    shown['lockup-p'] = p3(d.lockup_p);
  for (const [k, v] of Object.entries(shown))
    check(await text(`#failed-gate [data-k="${k}"]`) === v, `bad's failing verdict shows ${k} = ${v}`,
      await text(`#failed-gate [data-k="${k}"]`));
  check(await count('#verdicts tbody tr') === bad.verdicts.length, `bad lists its ${bad.verdicts.length} verdicts`);
  // beside the verdicts, the last one's evidence: what the lockup tests had seen
  const ev = bad.verdicts[bad.verdicts.length - 1].detail.evidence.lockups;
  const evShown = { 'sequential-lr': p3(ev.lr), 'sequential-threshold': p3(ev.lr_threshold) };
  if (ev.mu0 !== undefined)
    Object.assign(evShown, {
      'expected-lockups': p3(ev.mu0), 'needed-lockups': ev.mu_needed == null ? 'none enough' : p3(ev.mu_needed),
      'detectable-ratio': ev.detectable_ratio == null ? 'none up to 1000' : p3(ev.detectable_ratio),
    });
  for (const [k, v] of Object.entries(evShown))
    check(await text(`#evidence [data-k="${k}"]`) === v, `bad's last verdict's evidence shows ${k} = ${v}`,
      await text(`#evidence [data-k="${k}"]`));
  check(await text('[data-k="reached-1"]') === String(bad.members.filter(m => m.wave === 0).length),
    'bad: hosts its first wave reached');
  const win = fail.detail.window;
  const series = await api(`/v1/rollouts/series?name=bad&wave=${fail.wave + 1}&from=${win.from_ms}&to=${win.to_ms}`);
  const sum = side => series.series.sides.find(s => s.name === side).lockups.reduce((a, b) => a + b, 0);
  check(await text('[data-k="lockups-canary"]') === String(sum('canary')) && sum('canary') > 0,
    `bad's charts count the canaries' ${sum('canary')} lockups`, await text('[data-k="lockups-canary"]'));
  check(await text('[data-k="lockups-baseline"]') === String(sum('baseline')), 'bad\'s charts count the baselines\' lockups');
  const p99 = series.series.sides.map(s => s.probes['vmap-purge'].p99_ns.filter(x => x != null));
  check(p99[0].length > 0 && p99[1].length > 0 && Math.max(...p99[0]) > Math.max(...p99[1]),
    'the canaries\' vmap-purge p99 is above the baselines\' in the series', p99);
  check(await count('figure.chart[aria-label]') >= 2, 'each chart has a text label');
  await shot('rollout-bad');

  const good = await api('/v1/rollouts/status?name=good');
  await open('#/rollouts/good');
  check(await count('#failed-gate') === 0, 'a rollout that passed shows no failed gate');
  check(await count('#verdicts .state-pass') === good.verdicts.filter(v => v.verdict === 'pass').length,
    'good shows its passes');
  check(await text('[data-k="running-2"]') === String(good.members.filter(m => m.policy.name === 'good').length),
    'good: hosts running good after wave 2');
  await shot('rollout-good');

  // a canary of bad: facts, states, events with their stack tops
  const canary = bad.members.find(m => m.wave === 0).host_id;
  const hd = await api(`/v1/hosts/detail?id=${canary}`);
  await open(`#/hosts/${canary}`);
  await page.waitForFunction(() => document.querySelectorAll('.uplot canvas').length >= 2);
  check(await text('[data-k="Kernel"]') === hd.host.kernel_release, `host ${canary} shows its kernel`);
  for (const m of hd.host.mitigations)
    check(await text(`[data-k="state-${m.id}"]`) === m.state, `host ${canary}: ${m.id} ${m.state}`);
  check(await count('#events tbody tr') === hd.events.length && hd.events.length > 0,
    `host ${canary} lists its ${hd.events.length} newest events`);
  const soft = hd.events.filter(e => e.kind === 'soft-lockup');
  check(soft.length > 0 && soft.every(e => e.stack.length === 4), 'every soft lockup the agent read has its 4 frames',
    soft.map(e => e.stack.length));
  const lockup = soft[0];
  check(lockup && lockup.stack[0] === '__purge_vmap_area_lazy+0x2d1/0x770' &&
    (await page.locator('#events tbody tr', { hasText: 'soft-lockup' }).first().textContent()).includes(lockup.stack[0]),
    'a soft lockup is shown with its stack top');
  await shot('host');

  // live refresh: a rollout created now appears without a reload
  await open('#/rollouts');
  const before = await count('#rollouts tbody tr');
  await page.evaluate(() => { window.kmemctlTestMark = 1; });
  await page.evaluate(async () => {
    await fetch('/v1/rollouts', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'later', policy: 'good', version: 1, selector: { all: true }, waves: [{ percent: 100 }], bake_s: 60 }),
    });
  });
  await page.waitForFunction(n => document.querySelectorAll('#rollouts tbody tr').length === n + 1, before, { timeout: 12000 });
  check(await stays(), 'a new rollout appears within one refresh, without reloading the page');

  // builds: the seeded 6.1.0-58-amd64 hosts wait for a usercopy-fastpath record, reached from the nav
  await open('#/');
  await page.locator('nav a', { hasText: 'Builds' }).click();
  await page.waitForFunction(() => location.hash === '#/builds' && document.querySelector('#builds tbody tr'));
  const builds = await api('/v1/builds');
  const b58 = builds.builds.find(x => x.release === '6.1.0-58-amd64');
  check(b58 && b58.waiting['usercopy-fastpath'] > 0 && b58.hosts === b58.waiting['usercopy-fastpath'],
    'GET /v1/builds: the 6.1.0-58-amd64 hosts wait for usercopy-fastpath', JSON.stringify(b58));
  check(await count('#builds tbody tr') === builds.builds.length, `the builds page lists ${builds.builds.length} builds`);
  const row = page.locator('#builds tbody tr', { hasText: '6.1.0-58-amd64' });
  check(await row.locator(`[data-k="waiting-${b58.build_id}"]`).textContent() === `usercopy-fastpath: ${b58.hosts}` &&
    Number(await row.locator(`[data-k="hosts-${b58.build_id}"]`).textContent()) === b58.hosts &&
    (await row.textContent()).includes(b58.build_id.slice(0, 12)),
    'the builds page shows the build, its hosts and those waiting', await row.textContent());
  check((await text('#builds-waiting')).includes(`usercopy-fastpath: ${builds.waiting['usercopy-fastpath']}`),
    'the builds page says how many hosts wait in all', await text('#builds-waiting'));
  await shot('builds');

  // who the browser is, and the audit log (opened, not refreshed: each read of it is a row)
  await open('#/');
  await page.waitForFunction(() => document.querySelector('#whoami [data-k="role"]'));
  check(await text('#whoami [data-k="name"]') === 'ops' && await text('#whoami [data-k="role"]') === 'operator',
    'the header names the operator and its role', await text('#whoami'));
  const created = (await api('/v1/audit?action=rollout.create&limit=1000')).entries;
  await open('#/audit?action=rollout.create');
  check(await count('#audit tbody tr') === created.length && created.length >= 3,
    `the audit page filtered by action lists its ${created.length} rows`);
  check(await text('#audit tbody tr td:nth-child(2)') === 'ops' &&
    await text('#audit tbody tr td:nth-child(3)') === 'rollout.create', 'an audit row shows its actor and action');
  await page.locator('#audit tbody tr td:nth-child(2) a').first().click();
  await page.waitForFunction(() => location.hash === '#/audit?actor=ops' && Number(document.body.dataset.rendered) >= 2);
  const byOps = (await api('/v1/audit?actor=ops&limit=1000')).entries;
  const actors = await page.locator('#audit tbody tr td:nth-child(2)').allTextContents();
  check(actors.length > 0 && actors.every(a => a === 'ops') && actors.length <= byOps.length,
    `selecting an actor shows only that actor's rows (${actors.length})`);
  await shot('audit');

  // an observer's browser: the same pages, reads only, and kmemd refuses its changes
  const viewer = await operatorPage(env('VIEWER_CERT'), env('VIEWER_KEY'));
  await viewer.page.goto(`${URL}/#/`);
  await viewer.page.waitForFunction(() => Number(document.body.dataset.rendered) >= 1 &&
    document.querySelector('#whoami [data-k="role"]'));
  const vtext = async sel => (await viewer.page.locator(sel).first().textContent()).trim();
  check(await vtext('#whoami [data-k="role"]') === 'observer' && (await vtext('#whoami')).includes('reads only'),
    'an observer is shown as one, reading only', await vtext('#whoami'));
  check(await viewer.page.locator('#hosts tbody tr').count() > 0, 'an observer sees the fleet');
  const before403 = viewer.errors.length;
  const refused = await viewer.page.evaluate(async () => {
    const r = await fetch('/v1/hosts/revoke', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ host: 'h01' }),
    });
    return [r.status, await r.text()];
  });
  check(refused[0] === 403 && refused[1].includes('reads only'), 'kmemd refuses an observer\'s change (403)', refused);
  await viewer.page.screenshot({ path: path.join(OUT, 'observer.png'), fullPage: true });
  // the one error: Chromium logs the refused request it was asked to make
  check(before403 === 0 && viewer.errors.length === 1 && viewer.errors[0].includes('403'),
    'no errors in the observer\'s console but the refusal asked for', viewer.errors);
  await viewer.browser.close();

  // the fleet stop: a banner on the fleet page, and each host's page says what holds it off
  const post = (u, body) => page.evaluate(async ([x, b]) => {
    const r = await fetch(x, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: b });
    return r.status;
  }, [u, body]);
  check(await post('/v1/fleet/stop', '{"reason":"browser test"}') === 200, 'the operator stops the fleet');
  await open('#/');
  check(await count('#fleet-stop') === 1 && (await text('#fleet-stop')).includes('browser test'),
    'the fleet page says the fleet is stopped, by whom and why', await count('#fleet-stop'));
  const held = async () => (await api(`/v1/hosts/detail?id=${canary}`)).host.off === 'fleet-stop';
  for (let i = 0; i < 100 && !await held(); i++)
    await page.waitForTimeout(200);
  await open(`#/hosts/${canary}`);
  check(await text('[data-k="Held off by"]') === 'fleet stop', `host ${canary} says the fleet stop holds it off`,
    await text('[data-k="Held off by"]'));
  await shot('fleet-stop');
  check(await post('/v1/fleet/resume', '{}') === 200, 'the operator resumes the fleet');
  await open('#/');
  check(await count('#fleet-stop') === 0, 'the banner is gone once the fleet runs again');

  check(errors.length === 0, 'no errors in the console (scripts, CSP)', errors);
  await browser.close();
  if (failures)
    throw new Error(`${failures} checks failed`);
}

main().catch(e => {
  console.error(`FAIL: ${e.message}`);
  process.exit(1);
});
