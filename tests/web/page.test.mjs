// The page of `dsh-session-ref serve` in a real browser (Debian's headless
// Chromium through playwright-core), against a server tests/web/run.sh
// started over the root of fixture.mjs. DSR_WEB_URL is the URL the server
// printed (token included); DSR_WEB_OUT the folder for the screenshot and
// the first-paint figures, DSR_WEB_SCREENSHOT the screenshot's path when
// it goes elsewhere (docs/img/serve-page.png for docs/serve.md).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { LONG, HOSTILE, BACKOFF } from './fixture.mjs';

const URL_WITH_TOKEN = process.env.DSR_WEB_URL;
const OUT = process.env.DSR_WEB_OUT || 'target/web';
const SCREENSHOT = process.env.DSR_WEB_SCREENSHOT || join(OUT, 'serve-page.png');
const BROWSER = process.env.DSR_WEB_CHROMIUM || '/usr/bin/chromium';
if (!URL_WITH_TOKEN) throw new Error('DSR_WEB_URL is not set: run tests/web/run.sh');
const ORIGIN = new URL(URL_WITH_TOKEN).origin;

let browser;
let context;
let page;
const requests = [];   // every URL any page of the context asked for
const problems = [];   // console errors, page errors, CSP violations

before(async () => {
  browser = await chromium.launch({
    executablePath: BROWSER,
    // (the closed network here: no background connections, no sandbox as root)
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme: 'light' });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ORIGIN });
  context.on('request', (r) => requests.push(r.url()));
  page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
});

after(async () => {
  if (browser) await browser.close();
});

const composer = () => page.locator('#composer');
const options = () => page.locator('#picker-list [role="option"]');
const chips = () => page.locator('#composer .chip');
const composerText = () => page.evaluate(() => {
  let out = '';
  for (const n of document.getElementById('composer').childNodes) out += n.nodeType === 3 ? n.data : (n.dataset.mention ?? n.textContent);
  return out;
});

// Types `text`, which ends with `@query`, and waits for the server's answer
// to the whole query (the picker asks again at each pause in typing).
async function typeQuery(text, query) {
  const answered = page.waitForResponse((r) => /\/api\/(search|candidates)$/.test(r.url())
    && JSON.parse(r.request().postData() || '{}').query === query);
  await page.keyboard.type(text);
  await answered;
  await page.locator('#picker-status').filter({ hasNotText: /…$/ }).waitFor();
}

// Arrows down through the picker until the active option's title is `title`.
async function arrowTo(title) {
  for (let i = 0; i < 20; i += 1) {
    const active = await composer().getAttribute('aria-activedescendant');
    if (active && (await page.locator(`#${active} .option-title`).textContent()) === title) return;
    await page.keyboard.press('ArrowDown');
  }
  assert.fail(`no option titled ${title}`);
}

test('open with the token: the cookie replaces it, and the page is the composer', async () => {
  const response = await page.goto(URL_WITH_TOKEN);
  assert.equal(response.status(), 200);
  assert.equal(page.url(), `${ORIGIN}/`, 'the token is not left in the address bar');
  await composer().waitFor();
  assert.equal(await composer().getAttribute('role'), 'combobox');
  assert.equal(await composer().getAttribute('aria-expanded'), 'false');
  await page.locator('#info', { hasText: '7 sessions' }).waitFor();
  const csp = (await response.allHeaders())['content-security-policy'] || '';
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
});

test('@ and a word, arrows, Enter: a chip of the canonical mention', async () => {
  await composer().click();
  await page.keyboard.type('Compare @');
  await page.locator('#picker').waitFor();
  assert.equal(await composer().getAttribute('aria-expanded'), 'true');
  assert.equal(await composer().getAttribute('aria-controls'), 'picker-list');
  await options().first().waitFor();           // candidates for a bare @
  assert.ok(await options().count() > 0);
  await typeQuery('backoff', 'backoff');
  // Both sessions say "backoff" only in their messages: a search of what was said.
  const wanted = BACKOFF[1];
  // (the picker answers each pause in typing: wait for the answer to the whole word)
  await page.waitForFunction(() => document.querySelectorAll('#picker-list .option-snippet mark').length === 2);
  const titles = await page.locator('#picker-list .option-title').allTextContents();
  assert.deepEqual(titles.sort(), BACKOFF.map((s) => s.title).sort());
  const snippet = await page.locator('#picker-list .option', { hasText: wanted.title }).locator('.option-snippet').textContent();
  assert.match(snippet, /backoff/);
  assert.equal(await page.locator('#picker-list .option-snippet mark').first().textContent(), 'backoff');
  await arrowTo(wanted.title);
  const active = await composer().getAttribute('aria-activedescendant');
  assert.equal(await page.locator(`#${active}`).getAttribute('aria-selected'), 'true');
  assert.equal(await page.locator('[role="option"][aria-selected="true"]').count(), 1);
  await page.keyboard.press('Enter');
  assert.equal(await composer().getAttribute('aria-expanded'), 'false');
  assert.equal(await composer().getAttribute('aria-activedescendant'), null);
  assert.equal(await chips().count(), 1);
  assert.equal(await chips().first().textContent(), `@${wanted.title}`);
  const mention = await chips().first().getAttribute('data-mention');
  const expected = await page.evaluate(async (body) => (await (await fetch('/api/mention', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  })).json()).mention, { sessionId: wanted.id, label: wanted.title });
  assert.equal(mention, expected, 'the chip holds the server\'s canonical mention');
  assert.equal(await composerText(), `Compare ${expected} `);
  // The cursor beside the chip shows its id, cwd and date.
  assert.equal(await page.locator('#chip-card').isVisible(), false);
  // (the card follows the selection's change event: wait for it, bounded)
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('ArrowLeft');
  await page.locator('#chip-card').waitFor({ state: 'visible', timeout: 5000 });
  assert.match(await page.locator('#chip-card').textContent(), new RegExp(`${wanted.id}.*/home/dev/web`));
  await page.keyboard.press('End');
  await page.locator('#chip-card').waitFor({ state: 'hidden', timeout: 5000 });
});

test('Escape closes the picker and leaves the text', async () => {
  await typeQuery('with @parser', 'parser');
  await page.locator('#picker-list .option-title', { hasText: LONG.title }).waitFor();
  await page.keyboard.press('Escape');
  assert.equal(await composer().getAttribute('aria-expanded'), 'false');
  assert.ok((await composerText()).endsWith('with @parser'));
  // Back to it: a new @ opens the picker again.
  for (let i = 0; i < '@parser'.length; i += 1) await page.keyboard.press('Backspace');
  await typeQuery('@parser', 'parser');
  await arrowTo(LONG.title);
  await page.keyboard.press('Enter');
  await page.keyboard.type('before the release.');
  assert.equal(await chips().count(), 2);
});

test('Prepare shows the rewritten message and a summary per source, the context behind a disclosure', async () => {
  await page.locator('#prepare').click();
  await page.locator('#sources .source').nth(1).waitFor();
  const text = await page.locator('#prepared-text').textContent();
  assert.ok(text.includes(`@${BACKOFF[1].title}`), text);
  assert.ok(text.includes('before the release.'), text);
  assert.ok(!text.includes('dsh-session:'), 'the readable message, not the mention syntax');
  const sources = page.locator('#sources .source');
  assert.equal(await sources.count(), 2);
  assert.match(await sources.nth(0).locator('.source-title').textContent(), new RegExp(`^${BACKOFF[1].title}complete`));
  assert.match(await sources.nth(0).textContent(), /2 messages retained · 0 omitted/);
  // 80 messages of ~700 bytes do not fit one reference's 64 KiB: older ones are omitted.
  assert.match(await sources.nth(1).textContent(), /truncated/);
  assert.match(await sources.nth(1).textContent(), /compacted/);
  const details = page.locator('#context');
  assert.equal(await details.getAttribute('open'), null, 'the model-facing context is closed by default');
  assert.equal(await page.locator('#context-text').isVisible(), false);
  assert.match(await page.locator('#context-summary').textContent(), /from 2 sessions/);
  await page.locator('#context-summary').click();
  assert.match(await page.locator('#context-text').textContent(), /## Referenced sessions/);
  await page.locator('#context-summary').click();
});

test('the reader pages an 80-message session, newest first, to its first message', async () => {
  await chips().nth(1).click();
  await page.locator('#messages .message').first().waitFor();
  const newest = await page.locator('#messages .message').last().getAttribute('data-index');
  assert.equal(newest, String(LONG.messages - 1));
  const firstPage = await page.locator('#messages .message').count();
  assert.ok(firstPage < LONG.messages, 'more than one page');
  assert.ok(await page.locator('#load-older').isVisible());
  await page.locator('#messages .message').first().scrollIntoViewIfNeeded();
  await page.screenshot({ path: SCREENSHOT });
  let pages = 1;
  while (await page.locator('#load-older').isVisible()) {
    const before = await page.locator('#messages .message').count();
    await page.locator('#load-older').click();
    await page.waitForFunction((n) => document.querySelectorAll('#messages .message').length > n, before);
    pages += 1;
    assert.ok(pages < 40, 'the cursor ends');
  }
  assert.ok(pages >= 3, `${pages} pages`);
  const indexes = await page.locator('#messages .message').evaluateAll((els) => els.map((e) => Number(e.dataset.index)));
  assert.deepEqual(indexes, Array.from({ length: LONG.messages }, (_, i) => i), 'every message once, in order');
  const first = page.locator('#messages .message').first();
  assert.match(await first.textContent(), /Checkpoint 0: the story so far/);
  assert.equal(await first.locator('.badge.checkpoint').count(), 1, 'the checkpoint is marked');
  assert.equal(await page.locator('#messages .badge.checkpoint').count(), 1);
  assert.ok(await page.locator('#reader-start').isVisible());
  // Copy the session's mention and URI from the reader.
  const clipboard = () => page.evaluate(() => navigator.clipboard.readText());
  await page.locator('#copy-mention').click();
  await page.locator('#copy-status', { hasText: 'Copied the mention' }).waitFor();
  const mention = await chips().nth(1).getAttribute('data-mention');
  assert.equal(await clipboard(), mention);
  await page.locator('#copy-uri').click();
  await page.locator('#copy-status', { hasText: 'Copied the URI' }).waitFor();
  assert.equal(await clipboard(), mention.slice(mention.indexOf('](') + 2, -1));
  assert.match(await clipboard(), /^dsh-session:[A-Za-z0-9_-]+$/);
  // The message with its canonical mentions.
  await page.locator('#copy-message').click();
  await page.locator('#compose-status', { hasText: 'Copied the message' }).waitFor();
  assert.equal(await clipboard(), await composerText());
});

test('Backspace removes a chip whole', async () => {
  await composer().click();
  await page.keyboard.press('Control+End');
  const tail = ' before the release.';
  assert.ok((await composerText()).endsWith(tail));
  for (let i = 0; i < tail.length; i += 1) await page.keyboard.press('Backspace');
  assert.equal(await chips().count(), 2, 'text only so far');
  await page.keyboard.press('Backspace');
  assert.equal(await chips().count(), 1);
  const text = await composerText();
  assert.ok(text.endsWith('with '), JSON.stringify(text));
  assert.ok(!text.includes(LONG.title.slice(0, 6)), 'nothing of the chip is left');
});

test('session text that is markup is shown as text: no element is created', async () => {
  await page.locator('#clear').click();
  await typeQuery('@onerror', 'onerror');
  await page.locator('#picker-list .option-title', { hasText: HOSTILE.title }).waitFor();
  await arrowTo(HOSTILE.title);
  await page.keyboard.press('Enter');
  assert.equal(await chips().first().textContent(), `@${HOSTILE.title}`);
  await chips().first().click();
  await page.locator('#messages .message').nth(1).waitFor();
  assert.equal(await page.locator('#messages .message-text').first().textContent(), HOSTILE.text);
  await page.locator('#prepare').click();
  await page.locator('#sources .source').first().waitFor();
  assert.ok((await page.locator('#sources .source-title').first().textContent()).startsWith(HOSTILE.title));
  const dom = await page.evaluate(() => ({
    img: document.querySelectorAll('img').length,
    scripts: Array.from(document.scripts).map((s) => s.getAttribute('src')),
    pwned: window.__pwned,
  }));
  assert.deepEqual(dom, { img: 0, scripts: ['/assets/page.js'], pwned: undefined });
});

test('follows the system\'s dark preference', async () => {
  const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const light = await bg();
  await page.emulateMedia({ colorScheme: 'dark' });
  const dark = await bg();
  await page.emulateMedia({ colorScheme: 'light' });
  assert.notEqual(light, dark);
  const lum = (c) => c.match(/\d+/g).slice(0, 3).map(Number).reduce((a, b) => a + b, 0);
  assert.ok(lum(dark) < lum(light), `${dark} is darker than ${light}`);
});

test('first paint (figures for BENCHMARKS.md), no request to another origin, no error', async () => {
  const paints = [];
  for (let i = 0; i < 5; i += 1) {
    const p = await context.newPage();
    await p.goto(`${ORIGIN}/`);
    await p.locator('#composer').waitFor();
    await p.waitForFunction(() => performance.getEntriesByName('first-contentful-paint').length > 0);
    paints.push(await p.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      const at = (name) => performance.getEntriesByName(name)[0].startTime;
      return { firstPaint: at('first-paint'), firstContentfulPaint: at('first-contentful-paint'),
        domContentLoaded: nav.domContentLoadedEventEnd, transferred: nav.transferSize };
    }));
    await p.close();
  }
  const median = (k) => paints.map((x) => x[k]).sort((a, b) => a - b)[2];
  const figures = { runs: paints, median: { firstPaint: median('firstPaint'), firstContentfulPaint: median('firstContentfulPaint'), domContentLoaded: median('domContentLoaded') } };
  mkdirSync(OUT, { recursive: true });
  writeFileSync(join(OUT, 'first-paint.json'), `${JSON.stringify(figures, null, 2)}\n`);
  console.log(`first paint (median of 5, ms): ${JSON.stringify(figures.median)}`);
  assert.ok(requests.length > 5);
  const foreign = requests.filter((u) => new URL(u).origin !== ORIGIN);
  assert.deepEqual(foreign, [], 'every request goes to the server itself');
  assert.deepEqual(problems, []);
});
