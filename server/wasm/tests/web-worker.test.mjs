// The web extension's worker bundle (extension/out/web/worker.js, `npm run build:web`) in a real
// browser worker: headless Chromium starts it as VS Code for the web does (`new Worker(url)`, LSP
// messages as posted objects), and the test checks initialize, the published diagnostics of an
// opened file, a quick fix and a hover, so the bundle (the embedded module, the rule docs, the
// pump) works outside Node too.
//
// Needs `npm run build:web` (after server/wasm/build.sh), Debian's chromium and playwright-core.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const bundle = join(root, 'extension/out/web/worker.js');

let server;
let browser;
let page;

before(async () => {
  const worker = readFileSync(bundle);
  server = createServer((request, response) => {
    if (request.url === '/worker.js') {
      response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(worker);
    } else {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>worker</title>');
    }
  });
  await new Promise((resolvePromise) => server.listen(0, '127.0.0.1', resolvePromise));
  browser = await chromium.launch({
    executablePath: process.env.TPULINT_CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  page = await browser.newPage();
  page.on('pageerror', (error) => console.error('page error:', error));
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
});

after(async () => {
  await browser?.close();
  await new Promise((resolvePromise) => (server ? server.close(resolvePromise) : resolvePromise()));
});

test('the worker bundle serves LSP in a browser worker', async () => {
  const transcript = await page.evaluate(async () => {
    const worker = new Worker('/worker.js');
    const received = [];
    const waitFor = (find) =>
      new Promise((resolvePromise, reject) => {
        const deadline = Date.now() + 20000;
        const poll = () => {
          const found = received.find(find);
          if (found) resolvePromise(found);
          else if (Date.now() > deadline) reject(new Error(`timed out; received ${JSON.stringify(received)}`));
          else setTimeout(poll, 10);
        };
        poll();
      });
    worker.onmessage = (event) => received.push(event.data);
    const uri = 'file:///work/train.py';
    const text = 'import torch\nimport torch_xla\nx = torch.ones(2).to("cuda")\n';
    worker.postMessage({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { processId: null, rootUri: null, capabilities: {}, initializationOptions: { settings: { unsafeFixes: true } } } });
    const initialize = await waitFor((message) => message.id === 1);
    worker.postMessage({ jsonrpc: '2.0', method: 'initialized', params: {} });
    worker.postMessage({ jsonrpc: '2.0', method: 'textDocument/didOpen', params: { textDocument: { uri, languageId: 'python', version: 1, text } } });
    const published = await waitFor((message) => message.method === 'textDocument/publishDiagnostics');
    const cuda = published.params.diagnostics.find((diagnostic) => diagnostic.code === 'TPU401');
    worker.postMessage({ jsonrpc: '2.0', id: 2, method: 'textDocument/codeAction', params: { textDocument: { uri }, range: cuda.range, context: { diagnostics: [], only: ['quickfix'] } } });
    const actions = await waitFor((message) => message.id === 2);
    worker.postMessage({ jsonrpc: '2.0', id: 3, method: 'textDocument/hover', params: { textDocument: { uri }, position: cuda.range.start } });
    const hover = await waitFor((message) => message.id === 3);
    worker.terminate();
    return { initialize, published, actions, hover };
  });
  assert.equal(transcript.initialize.result.serverInfo.name, 'tpulint (WebAssembly)');
  assert.equal(transcript.published.params.version, 1);
  const codes = transcript.published.params.diagnostics.map((diagnostic) => diagnostic.code);
  assert.ok(codes.includes('TPU401'), JSON.stringify(codes));
  const titles = transcript.actions.result.map((action) => action.title);
  assert.ok(titles.includes('tpulint (TPU401): Disable for this line'), JSON.stringify(titles));
  assert.ok(titles.some((title) => /^tpulint \(TPU401\): /.test(title) && !title.includes('Disable')), JSON.stringify(titles));
  assert.match(transcript.hover.result.contents.value, /^# TPU401 \(/m);
  assert.match(transcript.hover.result.contents.value, /## What it does/);
});
