// SPDX-License-Identifier: GPL-2.0
// A page of Debian's Chromium (playwright-core) that reaches kmemd as an
// operator: for tests/web/dashboard.js and bench/dashboard-load.js. From
// the environment: URL, CERT and KEY (the operator's), CHROMIUM; another
// certificate and key (an observer's) may be given. The page's errors are
// gathered in errors.
'use strict';

const { chromium } = require('playwright-core');

function env(name) {
  if (!process.env[name])
    throw new Error(`${name} is not set`);
  return process.env[name];
}

async function operatorPage(cert = env('CERT'), key = env('KEY')) {
  const browser = await chromium.launch({ executablePath: env('CHROMIUM'), args: ['--no-sandbox'] });
  // kmemd's CA is not the browser's: the client certificate proxy checks nothing
  const ctx = await browser.newContext({
    ignoreHTTPSErrors: true,
    viewport: { width: 1280, height: 900 },
    clientCertificates: [{ origin: env('URL'), certPath: cert, keyPath: key }],
  });
  const page = await ctx.newPage();
  const errors = [];
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', e => errors.push(e.message));
  return { browser, page, errors };
}

module.exports = { env, operatorPage };
