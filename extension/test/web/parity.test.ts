/**
 * Parity: one scripted LSP session replayed against the native server (`tpulint server` over
 * stdio) and against the web worker's server (the TypeScript pump around the WebAssembly
 * `LanguageServer`, over a MessageChannel), requiring the same messages back, step by step.
 *
 * The script covers initialize, open, incremental edits, push and pull diagnostics (with result
 * ids, unchanged reports and workspace diagnostics), quick fixes, "Disable for this line",
 * fix-all (eager and resolved lazily), `tpulint.applyAutofix` with its `workspace/applyEdit`
 * round trip, hover, a notebook open and change with pulls, code actions and hover in a cell,
 * close, shutdown.
 *
 * What is normalised, and why (nothing else is):
 * - `serverInfo.name`: "tpulint" natively, "tpulint (WebAssembly)" in the browser.
 * - `tpulint.checkEnvironment` in the advertised commands (and in the error naming the supported
 *   ones): the environment check runs a Python interpreter, which a browser does not have.
 *
 * Needs the native binary (TPULINT_BIN, else target/debug/tpulint) and server/wasm/build.sh's
 * pkg/node-lsp.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { BrowserMessageReader, BrowserMessageWriter } from 'vscode-languageserver/browser';
import { startServer, type WasmLanguageServer } from '../../src/web/server';

const root = path.resolve(__dirname, '..', '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const wasm = require(path.join(root, 'server/wasm/pkg/node-lsp/tpulint_wasm.js')) as { LanguageServer: new (docs: string) => WasmLanguageServer };
const ruleDocs = fs.readFileSync(path.join(root, 'server/wasm/pkg/node-lsp/rule-docs.json'), 'utf8');
const binary = process.env.TPULINT_BIN ?? path.join(process.env.CARGO_TARGET_DIR ?? path.join(root, 'target'), 'debug', 'tpulint');

type Json = Record<string, unknown>;

/** A raw LSP client: sends messages, records everything the server sends, answers its requests. */
interface Peer {
  send(message: Json): void;
  received: Json[];
  close(): void;
}

/** How the client answers the server's requests (the same for both servers). */
function answer(request: Json): unknown {
  return request.method === 'workspace/applyEdit' ? { applied: true } : null;
}

function record(peer: Omit<Peer, 'received'>, received: Json[]) {
  return (message: Json) => {
    received.push(message);
    if (typeof message.method === 'string' && message.id !== undefined) {
      peer.send({ jsonrpc: '2.0', id: message.id, result: answer(message) });
    }
  };
}

function nativePeer(): Peer {
  if (!fs.existsSync(binary)) throw new Error(`the native server ${binary} is missing: cargo build -p tpulint, or set TPULINT_BIN`);
  const child = spawn(binary, ['server'], { stdio: ['pipe', 'pipe', 'ignore'] });
  const received: Json[] = [];
  const peer = {
    send(message: Json) {
      const body = Buffer.from(JSON.stringify(message), 'utf8');
      child.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
      child.stdin.write(body);
    },
    close() {
      child.kill();
    },
  };
  const onMessage = record(peer, received);
  let buffer = Buffer.alloc(0);
  child.stdout.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      const headerEnd = buffer.indexOf('\r\n\r\n');
      if (headerEnd < 0) return;
      const length = Number(/Content-Length: (\d+)/i.exec(buffer.subarray(0, headerEnd).toString())?.[1]);
      if (buffer.length < headerEnd + 4 + length) return;
      onMessage(JSON.parse(buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString('utf8')) as Json);
      buffer = buffer.subarray(headerEnd + 4 + length);
    }
  });
  return { ...peer, received };
}

function webPeer(): Peer {
  const channel = new MessageChannel();
  const serverPort = channel.port1 as never;
  startServer(new BrowserMessageReader(serverPort), new BrowserMessageWriter(serverPort), new wasm.LanguageServer(ruleDocs));
  const received: Json[] = [];
  const peer = {
    send(message: Json) {
      channel.port2.postMessage(message);
    },
    close() {
      channel.port1.close();
      channel.port2.close();
    },
  };
  channel.port2.on('message', record(peer, received));
  return { ...peer, received };
}

/** One step of the script: a message, and when its effects are complete. */
interface Step {
  name: string;
  message: Json;
  /** Done when these have arrived (besides the response to a request). */
  until?: (messages: Json[]) => boolean;
}

const QUIET_MS = 150;
const TIMEOUT_MS = 10_000;

async function run(peer: Peer, steps: Step[]): Promise<Json[][]> {
  const transcript: Json[][] = [];
  for (const step of steps) {
    const start = peer.received.length;
    peer.send(step.message);
    const id = step.message.id;
    const deadline = Date.now() + TIMEOUT_MS;
    let lastCount = -1;
    let quietSince = Date.now();
    for (;;) {
      const messages = peer.received.slice(start);
      const answered = id === undefined || messages.some((message) => message.id === id && message.method === undefined);
      const complete = answered && (step.until?.(messages) ?? true);
      if (messages.length !== lastCount) {
        lastCount = messages.length;
        quietSince = Date.now();
      }
      if (complete && Date.now() - quietSince >= QUIET_MS) break;
      if (Date.now() > deadline) throw new Error(`step "${step.name}" did not complete: ${JSON.stringify(messages)}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    transcript.push(peer.received.slice(start));
  }
  return transcript;
}

/** The normalisations listed at the top, and nothing else. */
function normalise(transcript: Json[][]): Json[][] {
  return JSON.parse(JSON.stringify(transcript), (key, value: unknown) => {
    if (key === 'serverInfo' && typeof value === 'object' && value !== null) return { ...value, name: '(server name)' };
    if (key === 'commands' && Array.isArray(value)) return (value as unknown[]).filter((command) => command !== 'tpulint.checkEnvironment');
    if (key === 'message' && typeof value === 'string') return value.replace('tpulint.checkEnvironment, ', '');
    return value;
  }) as Json[][];
}

let nextId = 1;
const request = (method: string, params: unknown): Json => ({ jsonrpc: '2.0', id: nextId++, method, params });
const notification = (method: string, params: unknown): Json => ({ jsonrpc: '2.0', method, params });
const published = (uri: string, version?: number) => (messages: Json[]) =>
  messages.some((message) => message.method === 'textDocument/publishDiagnostics' && (message.params as Json).uri === uri && (version === undefined || (message.params as Json).version === version));

function script(directory: string, pull: boolean, encoding: string): Step[] {
  nextId = 1;
  const uri = `file://${directory}/train.py`;
  const notebook = `file://${directory}/explore.ipynb`;
  const cell = (n: number) => `vscode-notebook-cell:${directory}/explore.ipynb#cell${n}`;
  // Unicode before findings: UTF-16 columns differ from bytes and code points.
  const text = [
    'import torch',
    'import torch_xla',
    'name = "é😀"; device = torch.device("cuda")',
    'x = torch.ones(2).to(device)',
    'for step in range(10):',
    '    loss = x.sum()',
    '    print(loss.item())',
    '',
  ].join('\n');
  const capabilities = {
    general: { positionEncodings: [encoding] },
    workspace: { applyEdit: true },
    textDocument: pull ? { diagnostic: { dynamicRegistration: false }, codeAction: { resolveSupport: { properties: ['edit'] } } } : {},
    notebookDocument: { synchronization: {} },
  };
  const push = (check: (messages: Json[]) => boolean) => (pull ? undefined : check);
  const steps: Step[] = [
    { name: 'initialize', message: request('initialize', { processId: null, rootUri: null, capabilities, initializationOptions: { settings: { unsafeFixes: true } } }) },
    { name: 'initialized', message: notification('initialized', {}) },
    {
      name: 'open',
      message: notification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text } }),
      until: push(published(uri, 1)),
    },
    {
      name: 'incremental edit',
      message: notification('textDocument/didChange', {
        textDocument: { uri, version: 2 },
        contentChanges: [{ range: { start: { line: 7, character: 0 }, end: { line: 7, character: 0 } }, text: 'y = torch.zeros(3).cuda()\n' }],
      }),
      until: push(published(uri, 2)),
    },
    {
      name: 'second edit',
      message: notification('textDocument/didChange', {
        textDocument: { uri, version: 3 },
        contentChanges: [{ range: { start: { line: 2, character: 8 }, end: { line: 2, character: 10 } }, text: 'ü' }],
      }),
      until: push(published(uri, 3)),
    },
  ];
  if (pull) {
    steps.push(
      { name: 'pull', message: request('textDocument/diagnostic', { textDocument: { uri } }) },
      { name: 'pull unchanged', message: request('textDocument/diagnostic', { textDocument: { uri }, previousResultId: '3:1:0' }) },
      { name: 'workspace pull', message: request('workspace/diagnostic', { previousResultIds: [] }) },
    );
  }
  const everything = { start: { line: 0, character: 0 }, end: { line: 9, character: 0 } };
  steps.push(
    { name: 'quick fixes and noqa', message: request('textDocument/codeAction', { textDocument: { uri }, range: { start: { line: 2, character: 0 }, end: { line: 3, character: 0 } }, context: { diagnostics: [] } }) },
    { name: 'fix all', message: request('textDocument/codeAction', { textDocument: { uri }, range: everything, context: { diagnostics: [], only: ['source.fixAll'] } }) },
  );
  if (pull) {
    steps.push({
      name: 'resolve fix all',
      message: request('codeAction/resolve', { title: 'Fix all tpulint issues', kind: 'source.fixAll.tpulint', data: { uri, version: 3 } }),
    });
  }
  steps.push(
    { name: 'hover', message: request('textDocument/hover', { textDocument: { uri }, position: { line: 2, character: 38 } }) },
    { name: 'hover on nothing', message: request('textDocument/hover', { textDocument: { uri }, position: { line: 0, character: 0 } }) },
    { name: 'apply autofix', message: request('workspace/executeCommand', { command: 'tpulint.applyAutofix', arguments: [{ uri, version: 3 }] }) },
    { name: 'unknown command', message: request('workspace/executeCommand', { command: 'tpulint.nope', arguments: [] }) },
    {
      name: 'notebook open',
      message: notification('notebookDocument/didOpen', {
        notebookDocument: {
          uri: notebook,
          notebookType: 'jupyter-notebook',
          version: 1,
          cells: [
            { kind: 2, document: cell(1) },
            { kind: 1, document: cell(2) },
            { kind: 2, document: cell(3) },
          ],
        },
        cellTextDocuments: [
          { uri: cell(1), languageId: 'python', version: 1, text: '%pip install torch_xla\nimport torch\nimport torch_xla\n!nvidia-smi\n' },
          { uri: cell(2), languageId: 'markdown', version: 1, text: '# Training\n' },
          { uri: cell(3), languageId: 'python', version: 1, text: 'x = torch.ones(2).to("cuda")\nprint(x.sum().item())\n' },
        ],
      }),
      until: push(published(cell(3), 1)),
    },
    {
      name: 'notebook cell edit',
      message: notification('notebookDocument/didChange', {
        notebookDocument: { uri: notebook, version: 2 },
        change: {
          cells: {
            textContent: [
              {
                document: { uri: cell(3), version: 2 },
                changes: [{ range: { start: { line: 2, character: 0 }, end: { line: 2, character: 0 } }, text: 'y = torch.zeros(1).cuda()\n' }],
              },
            ],
          },
        },
      }),
      until: push(published(cell(3), 2)),
    },
  );
  if (pull) {
    steps.push({ name: 'cell pull', message: request('textDocument/diagnostic', { textDocument: { uri: cell(3) } }) });
  }
  steps.push(
    { name: 'cell code actions', message: request('textDocument/codeAction', { textDocument: { uri: cell(3) }, range: { start: { line: 0, character: 0 }, end: { line: 3, character: 0 } }, context: { diagnostics: [] } }) },
    { name: 'notebook fix all', message: request('textDocument/codeAction', { textDocument: { uri: cell(3) }, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, context: { diagnostics: [], only: ['notebook.source.fixAll.tpulint'] } }) },
    { name: 'cell hover', message: request('textDocument/hover', { textDocument: { uri: cell(3) }, position: { line: 0, character: 22 } }) },
    { name: 'close', message: notification('textDocument/didClose', { textDocument: { uri } }), until: push(published(uri)) },
    { name: 'shutdown', message: request('shutdown', null) },
  );
  return steps;
}

async function replay(make: () => Peer, directory: string, pull: boolean, encoding: string): Promise<Json[][]> {
  const peer = make();
  try {
    return normalise(await run(peer, script(directory, pull, encoding)));
  } finally {
    peer.close();
  }
}

describe('native and web servers answer alike', () => {
  // VS Code speaks UTF-16; other clients may offer UTF-8 or UTF-32 (the text has characters
  // where the three differ).
  for (const [pull, encoding] of [
    [false, 'utf-16'],
    [true, 'utf-16'],
    [false, 'utf-8'],
    [true, 'utf-32'],
  ] as const) {
    it(`one session with ${pull ? 'pull' : 'push'} diagnostics, ${encoding} positions`, async () => {
      // A directory without configuration files: the native server resolves settings by path.
      const directory = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'tpulint-parity-')));
      try {
        const native = await replay(nativePeer, directory, pull, encoding);
        const web = await replay(webPeer, directory, pull, encoding);
        const steps = script(directory, pull, encoding);
        assert.equal(web.length, native.length);
        for (let index = 0; index < native.length; index++) {
          assert.deepEqual(web[index], native[index], `step "${steps[index].name}" differs`);
        }
        // The script exercised what it claims to.
        const flat = JSON.stringify(native);
        for (const expected of ['Disable for this line', 'Fix all tpulint issues', 'workspace/applyEdit', '# TPU401', 'vscode-notebook-cell']) {
          assert.ok(flat.includes(expected), `the transcript lacks ${expected}`);
        }
      } finally {
        fs.rmSync(directory, { recursive: true, force: true });
      }
    });
  }
});
