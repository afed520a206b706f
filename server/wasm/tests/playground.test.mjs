// The playground (docs/playground/) in headless Chromium: served from a localhost static server
// started here, the page loads the WebAssembly build in a web worker; the test pastes PyTorch
// code, waits for the findings, checks them against the wasm build, previews and applies a fix,
// and takes a screenshot (docs/images/playground.png with TPULINT_UPDATE_SCREENSHOTS=1).
//
// Needs server/wasm/build.sh (docs/playground/pkg), Debian's chromium and playwright-core.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const docs = join(root, 'docs');
const require = createRequire(import.meta.url);
const wasm = require(join(root, 'server/wasm/pkg/node/tpulint_wasm.js'));

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.md': 'text/markdown; charset=utf-8',
};

/** Serves docs/ read-only on 127.0.0.1 (the only address this test talks to). */
function serveDocs() {
  const server = createServer((request, response) => {
    const pathname = decodeURIComponent(new URL(request.url, 'http://localhost').pathname);
    const path = normalize(join(docs, pathname));
    if (!path.startsWith(docs + sep)) {
      response.writeHead(403).end();
      return;
    }
    try {
      const file = statSync(path).isDirectory() ? join(path, 'index.html') : path;
      const body = readFileSync(file);
      response.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(body);
    } catch {
      response.writeHead(404).end('not found');
    }
  });
  return new Promise((resolvePromise) => server.listen(0, '127.0.0.1', () => resolvePromise(server)));
}

const PASTED = `import torch
import torch_xla
import torch_xla.core.xla_model as xm

model = torch.nn.Linear(8, 2).to("cuda")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train(loader):
    for batch, labels in loader:
        loss = torch.nn.functional.cross_entropy(model(batch), labels)
        loss.backward()
        optimizer.step()
        print("loss", loss.item())
`;

let server;
let browser;
let page;
let base;

before(async () => {
  server = await serveDocs();
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({
    executablePath: process.env.TPULINT_CHROMIUM ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
  page.on('pageerror', (error) => console.error('page error:', error));
});

after(async () => {
  await browser?.close();
  await new Promise((resolvePromise) => (server ? server.close(resolvePromise) : resolvePromise()));
});

async function findings() {
  return page.$$eval('.finding', (items) =>
    items.map((item) => ({
      code: item.dataset.code,
      row: Number(item.dataset.row),
      position: item.querySelector('.position').textContent,
      severity: item.querySelector('.severity').textContent,
      message: item.querySelector('.message').textContent,
      fix: item.querySelector('.fix .title')?.textContent ?? null,
    })),
  );
}

/** Waits until the page shows the findings for exactly this text. */
async function waitForFindingsOf(source, options) {
  const expected = wasm.check(source, options);
  await page.waitForFunction(
    ({ count, text }) =>
      document.getElementById('source').value === text &&
      document.querySelectorAll('.finding').length === count &&
      /checked in/.test(document.getElementById('status').textContent),
    { count: expected.length, text: source },
    { timeout: 15000 },
  );
  return expected;
}

test('the sample is analysed as soon as the page loads', async () => {
  await page.goto(`${base}/playground/`);
  await page.waitForSelector('.finding', { timeout: 15000 });
  const sample = await page.inputValue('#source');
  const expected = await waitForFindingsOf(sample, { backend: 'auto' });
  assert.ok(expected.length > 0, 'the sample has findings');
  const shown = await findings();
  assert.deepEqual(
    shown.map((f) => [f.code, f.position]),
    expected.map((d) => [d.code, `${d.location.row}:${d.location.column}`]),
  );
});

test('pasted code shows its findings with line, code, message, severity and fix', async () => {
  await page.fill('#source', '');
  await page.focus('#source');
  // A real paste: the clipboard event inserts the text, and the page reacts to its input event.
  await page.evaluate((text) => {
    const area = document.getElementById('source');
    const data = new DataTransfer();
    data.setData('text/plain', text);
    area.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    area.setRangeText(text, 0, area.value.length, 'end');
    area.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertFromPaste', data: text }));
  }, PASTED);
  const expected = await waitForFindingsOf(PASTED, { backend: 'auto' });
  const shown = await findings();
  assert.equal(shown.length, expected.length);
  for (const [index, diagnostic] of expected.entries()) {
    assert.equal(shown[index].code, diagnostic.code);
    assert.equal(shown[index].row, diagnostic.location.row);
    assert.equal(shown[index].message, diagnostic.message);
    assert.equal(shown[index].severity, diagnostic.severity);
    assert.equal(shown[index].fix, diagnostic.fix?.message ?? null);
  }
  const cuda = shown.find((f) => f.code === 'TPU401');
  assert.ok(cuda, 'the "cuda" device string is flagged');
  assert.equal(cuda.row, 5);
  assert.ok(shown.some((f) => f.code === 'TPU101' && f.row === 14), '`.item()` in the loop is flagged');
  const status = await page.textContent('#status');
  assert.match(status, new RegExp(`^${expected.length} findings`));
});

test('a fix can be previewed, then applied', async () => {
  const cudaItem = page.locator('.finding[data-code="TPU401"]').first();
  await cudaItem.locator('button.preview').click();
  const diff = await page.locator('.diff').first().innerText();
  assert.match(diff, /^- model = torch\.nn\.Linear\(8, 2\)\.to\("cuda"\)/m);
  assert.match(diff, /^\+ /m);
  assert.doesNotMatch(diff.split('\n').find((line) => line.startsWith('+')), /"cuda"/);

  const screenshot = process.env.TPULINT_UPDATE_SCREENSHOTS
    ? join(docs, 'images/playground.png')
    : join(mkdtempSync(join(tmpdir(), 'tpulint-playground-')), 'playground.png');
  await page.screenshot({ path: screenshot });
  assert.ok(statSync(screenshot).size > 20_000, 'the screenshot has content');

  await cudaItem.locator('button.apply').click();
  const fixed = await page.waitForFunction(
    () => !document.getElementById('source').value.includes('.to("cuda")') && document.getElementById('source').value,
  );
  const text = await fixed.jsonValue();
  await waitForFindingsOf(text, { backend: 'auto' });
  assert.equal((await findings()).filter((f) => f.code === 'TPU401').length, 0);
});

test('"Apply all fixes" gives what applyFixes gives, and the backend setting is used', async () => {
  await page.fill('#source', PASTED);
  await waitForFindingsOf(PASTED, { backend: 'auto' });
  await page.click('#fix-unsafe');
  const expected = wasm.applyFixes(PASTED, { backend: 'auto' }, true).output;
  await page.waitForFunction((text) => document.getElementById('source').value === text, expected);
  await waitForFindingsOf(expected, { backend: 'auto' });

  await page.fill('#source', 'import torch\nx = torch.ones(2).to("cuda")\n');
  await page.selectOption('#backend', 'torchtpu');
  const source = await page.inputValue('#source');
  await waitForFindingsOf(source, { backend: 'torchtpu' });
  const cuda = (backend) => wasm.check(source, { backend }).find((d) => d.code === 'TPU401');
  assert.notEqual(cuda('torchtpu').fix.message, cuda('torch_xla').fix.message, 'the backends fix differently');
  await page.waitForFunction(
    (title) => document.querySelector('.finding[data-code="TPU401"] .fix .title')?.textContent === title,
    cuda('torchtpu').fix.message,
  );
});
