// SPDX-License-Identifier: GPL-2.0
// The dashboard's pages at a fleet's size, in Debian's Chromium driven by
// playwright-core, for bench/fleet: each page loaded 5 times, the median
// time from navigation to its first render (the page's kmemctl-rendered
// mark), and what it shows checked against the fleet's size. One line per
// page on stdout: "PAGE MS"; a page that shows the wrong numbers fails it.
//
//   URL=https://127.0.0.1:PORT CERT=... KEY=... HOSTS=N ROLLOUT=NAME HOST=ID \
//     CHROMIUM=/usr/bin/chromium NODE_PATH=build/web/npm/node_modules \
//     node bench/dashboard-load.js
'use strict';

const { env, operatorPage } = require('../tests/web/operator-page');

const URL = env('URL'), HOSTS = Number(env('HOSTS')), ROLLOUT = env('ROLLOUT'), HOST = env('HOST');
const RUNS = 5;

async function main() {
  const { browser, page, errors } = await operatorPage();
  const text = async sel => (await page.locator(sel).first().textContent()).trim();

  // a page's load: from navigation to the first render, as the page marks it
  async function load(hash) {
    await page.goto('about:blank');
    await page.goto(`${URL}/${hash}`);
    await page.waitForFunction(() => Number(document.body.dataset.rendered) >= 1, null, { timeout: 600000 });
    return page.evaluate(() => performance.getEntriesByName('kmemctl-rendered')[0].startTime);
  }
  async function median(hash) {
    const t = [];
    for (let i = 0; i < RUNS; i++)
      t.push(await load(hash));
    t.sort((a, b) => a - b);
    return t[RUNS >> 1];
  }
  const wrong = [];
  const expect = (what, got, want) => { if (got !== want) wrong.push(`${what}: ${got}, not ${want}`); };

  const pages = [
    ['#/', async () => expect('hosts reporting', await text('[data-k="hosts"]'), String(HOSTS))],
    ['#/rollouts', async () => expect('rollout listed', await page.locator('#rollouts tbody tr', { hasText: ROLLOUT }).count(), 1)],
    [`#/rollouts/${ROLLOUT}`, async () => {
      // a rollout over the fleet, done: its last wave reaches every host, and every one runs it
      const last = await page.locator('#waves tbody tr').count();
      expect('hosts reached', await text(`[data-k="reached-${last}"]`), String(HOSTS));
      expect('hosts running it', await text(`[data-k="running-${last}"]`), String(HOSTS));
    }],
    [`#/hosts/${HOST}`, async () => expect('host shown', (await text('h2')).endsWith(HOST), true)],
  ];
  for (const [hash, check] of pages) {
    const ms = await median(hash);
    await check();
    console.log(`${hash} ${ms.toFixed(1)}`);
  }
  await browser.close();
  if (errors.length)
    wrong.push(`page errors: ${errors.join('; ')}`);
  if (wrong.length) {
    console.error(`dashboard-load: ${wrong.join('; ')}`);
    process.exit(1);
  }
}

main().catch(e => { console.error(e); process.exit(1); });
