/**
 * The web extension's language server driven over a MessageChannel, as VS Code for the web drives
 * it over the worker's port: the TypeScript pump (extension/src/web/server.ts) around the real
 * WebAssembly build's `LanguageServer` (server/wasm/pkg/node-lsp, made by server/wasm/build.sh), which
 * holds all of the protocol logic. Initialize, open, edit, quick fixes, noqa, fix-all, the
 * applyAutofix command, hover, settings changes, notebooks, close, exit.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import {
  BrowserMessageReader as ClientReader,
  BrowserMessageWriter as ClientWriter,
  createMessageConnection,
  type MessageConnection,
} from 'vscode-jsonrpc/browser';
import {
  BrowserMessageReader,
  BrowserMessageWriter,
  type CodeAction,
  type Diagnostic,
  type PublishDiagnosticsParams,
  type TextEdit,
  type WorkspaceEdit,
} from 'vscode-languageserver/browser';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { SERVER_CRASHED, startServer, type WasmLanguageServer } from '../../src/web/server';

/** The web extension's module (pkg/node-lsp). */
interface LanguageServerModule {
  LanguageServer: new (ruleDocs: string) => WasmLanguageServer;
  version(): string;
}

/** The playground's module (pkg/node): the CLI's JSON, the oracle of these tests. */
interface EngineModule {
  check(source: string, options: Record<string, unknown>): JsonDiagnostic[];
  applyFixes(source: string, options: Record<string, unknown>, unsafe: boolean): { output: string };
}

/** What `check` lists (the CLI's JSON): 1-based rows, code-point columns. */
interface JsonDiagnostic {
  code: string;
  location: { row: number; column: number };
  fix: { edits: { content: string; location: { row: number; column: number }; end_location: { row: number; column: number } }[] } | null;
}

const root = path.resolve(__dirname, '..', '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const wasm = require(path.join(root, 'server/wasm/pkg/node-lsp/tpulint_wasm.js')) as LanguageServerModule;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const engine = require(path.join(root, 'server/wasm/pkg/node/tpulint_wasm.js')) as EngineModule;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const ruleDocs = require(path.join(root, 'server/wasm/pkg/node-lsp/rule-docs.json')) as Record<string, { explanation: string }>;

/** The UTF-16 offset of a CLI JSON location in `text` (test oracle only). */
function offsetOf(text: string, location: { row: number; column: number }): number {
  const lines = text.split('\n');
  let offset = 0;
  for (let row = 1; row < location.row; row++) offset += lines[row - 1].length + 1;
  const line = lines[location.row - 1] ?? '';
  return offset + [...line].slice(0, location.column - 1).join('').length;
}

/** A server on one end of a channel, a JSON-RPC client on the other. */
function connect(): {
  client: MessageConnection;
  diagnostics: PublishDiagnosticsParams[];
  edits: WorkspaceEdit[];
  shown: string[];
  exited: () => boolean;
  close: () => void;
} {
  const channel = new MessageChannel();
  // Node's MessagePort has the browser's onmessage/postMessage; the DOM type names are not
  // available to this project's TypeScript settings, hence the casts.
  const serverPort = channel.port1 as never;
  const clientPort = channel.port2 as never;
  let exited = false;
  startServer(new BrowserMessageReader(serverPort), new BrowserMessageWriter(serverPort), new wasm.LanguageServer(JSON.stringify(ruleDocs)), () => {
    exited = true;
  });
  const client = createMessageConnection(new ClientReader(clientPort), new ClientWriter(clientPort));
  const diagnostics: PublishDiagnosticsParams[] = [];
  const edits: WorkspaceEdit[] = [];
  const shown: string[] = [];
  client.onNotification('textDocument/publishDiagnostics', (params: PublishDiagnosticsParams) => {
    diagnostics.push(params);
  });
  client.onRequest('workspace/applyEdit', (params: { edit: WorkspaceEdit }) => {
    edits.push(params.edit);
    return { applied: true };
  });
  client.onNotification('window/logMessage', () => undefined);
  client.onNotification('window/showMessage', (params: { message: string }) => {
    shown.push(params.message);
  });
  client.listen();
  return {
    client,
    diagnostics,
    edits,
    shown,
    exited: () => exited,
    close: () => {
      client.dispose();
      channel.port1.close();
      channel.port2.close();
    },
  };
}

async function waitFor<T>(find: () => T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function applyTextEdits(text: string, edits: TextEdit[]): string {
  return TextDocument.applyEdits(TextDocument.create('file:///x.py', 'python', 0, text), edits);
}

const URI = 'file:///work/train.py';
/** One rule and a backend, so that what the fix tests expect does not move as rules are added. */
const CUDA_ONLY = { select: ['TPU401'], backend: 'torch_xla' };
// `é` and an astral character before the finding: UTF-16 columns differ from code points.
const SOURCE = 'import torch\nname = "é😀"; device = torch.device("cuda")\nx = torch.ones(2).to(device)\n';

async function initialize(client: MessageConnection, settings: Record<string, unknown> = {}) {
  const result = await client.sendRequest<{ capabilities: Record<string, unknown>; serverInfo: { name: string; version: string } }>('initialize', {
    processId: null,
    rootUri: null,
    capabilities: {},
    initializationOptions: { settings },
  });
  await client.sendNotification('initialized', {});
  return result;
}

async function open(session: ReturnType<typeof connect>, text = SOURCE, version = 1): Promise<Diagnostic[]> {
  const before = session.diagnostics.length;
  await session.client.sendNotification('textDocument/didOpen', { textDocument: { uri: URI, languageId: 'python', version, text } });
  const published = await waitFor(() => session.diagnostics.slice(before).find((p) => p.uri === URI), 'diagnostics after open');
  return published.diagnostics;
}

describe('web language server', () => {
  it('initialize advertises what the native server does', async () => {
    const session = connect();
    try {
      const result = await initialize(session.client);
      assert.equal(result.serverInfo.version, wasm.version());
      const capabilities = result.capabilities as {
        codeActionProvider: { codeActionKinds: string[] };
        executeCommandProvider: { commands: string[] };
        hoverProvider: boolean;
        notebookDocumentSync: unknown;
      };
      assert.deepEqual(capabilities.codeActionProvider.codeActionKinds, ['quickfix', 'source.fixAll', 'source.fixAll.tpulint', 'notebook.source.fixAll.tpulint']);
      // No environment check in the browser (it needs a Python interpreter).
      assert.deepEqual(capabilities.executeCommandProvider.commands, ['tpulint.applyAutofix', 'tpulint.printDebugInformation']);
      assert.equal(capabilities.hoverProvider, true);
      assert.ok(capabilities.notebookDocumentSync);
    } finally {
      session.close();
    }
  });

  it('open publishes the diagnostics with UTF-16 positions and metadata', async () => {
    const session = connect();
    try {
      await initialize(session.client);
      const diagnostics = await open(session);
      assert.equal(diagnostics.length, engine.check(SOURCE, { filename: 'train.py' }).length);
      const cuda = diagnostics.find((d) => d.code === 'TPU401');
      assert.ok(cuda, JSON.stringify(diagnostics));
      assert.equal(cuda.source, 'tpulint');
      assert.equal(cuda.severity, 1);
      const line = SOURCE.split('\n')[1];
      // JavaScript strings are UTF-16: indexOf gives the LSP character offset directly.
      assert.deepEqual(cuda.range.start, { line: 1, character: line.indexOf('"cuda"') });
      assert.deepEqual(cuda.range.end, { line: 1, character: line.indexOf('"cuda"') + 6 });
      assert.match(cuda.codeDescription?.href ?? '', /TPU401/);
      assert.equal(session.diagnostics.at(-1)?.version, 1);
    } finally {
      session.close();
    }
  });

  it('quick fixes edit the document like the fix they came from; noqa disables the line', async () => {
    const session = connect();
    try {
      await initialize(session.client, CUDA_ONLY);
      const diagnostics = await open(session);
      const actions = await session.client.sendRequest<CodeAction[]>('textDocument/codeAction', {
        textDocument: { uri: URI },
        range: diagnostics[0].range,
        context: { diagnostics, only: ['quickfix'] },
      });
      const cudaFix = actions.find((action) => action.diagnostics?.[0]?.code === 'TPU401' && !action.title.includes('Disable'));
      assert.ok(cudaFix, JSON.stringify(actions));
      assert.equal(cudaFix.kind, 'quickfix');
      assert.match(cudaFix.title, /^tpulint \(TPU401\): /);
      const fixed = applyTextEdits(SOURCE, cudaFix.edit?.changes?.[URI] ?? []);
      const json = engine.check(SOURCE, CUDA_ONLY).find((d) => d.code === 'TPU401');
      let expected = SOURCE;
      for (const edit of [...(json?.fix?.edits ?? [])].reverse()) {
        expected = expected.slice(0, offsetOf(SOURCE, edit.location)) + edit.content + expected.slice(offsetOf(SOURCE, edit.end_location));
      }
      assert.equal(fixed, expected);
      assert.notEqual(fixed, SOURCE);
      const noqa = actions.find((action) => action.title === 'tpulint (TPU401): Disable for this line');
      assert.ok(noqa, JSON.stringify(actions));
      assert.match(applyTextEdits(SOURCE, noqa.edit?.changes?.[URI] ?? []).split('\n')[1], /# noqa: TPU401$/);
    } finally {
      session.close();
    }
  });

  it('fix-all follows unsafeFixes as a minimal edit, and settings changes re-check open documents', async () => {
    const session = connect();
    try {
      await initialize(session.client, { ...CUDA_ONLY, unsafeFixes: false });
      await open(session);
      const request = () =>
        session.client.sendRequest<CodeAction[]>('textDocument/codeAction', {
          textDocument: { uri: URI },
          range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
          context: { diagnostics: [], only: ['source.fixAll'] },
        });
      // TPU401's rewrite is unsafe, so safe-only fix-all has nothing to do.
      assert.equal(engine.applyFixes(SOURCE, CUDA_ONLY, false).output, SOURCE);
      assert.deepEqual(await request(), []);

      const before = session.diagnostics.length;
      await session.client.sendNotification('workspace/didChangeConfiguration', { settings: { ...CUDA_ONLY, unsafeFixes: true } });
      await waitFor(() => (session.diagnostics.length > before ? true : undefined), 're-check after settings change');
      const [fixAll] = await request();
      assert.equal(fixAll.kind, 'source.fixAll.tpulint');
      assert.equal(fixAll.title, 'Fix all tpulint issues');
      const edits = fixAll.edit?.changes?.[URI] ?? [];
      // One edit covering only what changed, not the whole document.
      assert.equal(edits.length, 1);
      assert.ok(edits[0].range.start.line >= 1, JSON.stringify(edits));
      assert.equal(applyTextEdits(SOURCE, edits), engine.applyFixes(SOURCE, CUDA_ONLY, true).output);

      const count = session.diagnostics.length;
      await session.client.sendNotification('workspace/didChangeConfiguration', { settings: { ...CUDA_ONLY, ignore: ['TPU401'] } });
      const update = await waitFor(() => session.diagnostics.slice(count).find((p) => p.uri === URI), 'diagnostics after ignore');
      assert.deepEqual(update.diagnostics, []);
    } finally {
      session.close();
    }
  });

  it('tpulint.applyAutofix sends the fix-all edit through workspace/applyEdit', async () => {
    const session = connect();
    try {
      await initialize(session.client, { ...CUDA_ONLY, unsafeFixes: true });
      await open(session, SOURCE, 7);
      const result = await session.client.sendRequest('workspace/executeCommand', { command: 'tpulint.applyAutofix', arguments: [{ uri: URI, version: 7 }] });
      assert.equal(result, null);
      assert.equal(session.edits.length, 1);
      assert.equal(applyTextEdits(SOURCE, session.edits[0].changes?.[URI] ?? []), engine.applyFixes(SOURCE, CUDA_ONLY, true).output);
      await assert.rejects(
        session.client.sendRequest('workspace/executeCommand', { command: 'tpulint.applyAutofix', arguments: [{ uri: 'file:///nope.py' }] }),
        /is not open/,
      );
      await assert.rejects(session.client.sendRequest('workspace/executeCommand', { command: 'tpulint.nope', arguments: [] }), /unknown command/);
    } finally {
      session.close();
    }
  });

  it('edits are applied in order and the last version wins', async () => {
    const session = connect();
    try {
      await initialize(session.client);
      await open(session);
      // Twenty quick edits: each appends a line; only the final text's diagnostics matter.
      let text = SOURCE;
      for (let version = 2; version <= 21; version++) {
        const line = text.split('\n').length - 1;
        const added = `y${version} = torch.zeros(1).to("cuda")\n`;
        text += added;
        await session.client.sendNotification('textDocument/didChange', {
          textDocument: { uri: URI, version },
          contentChanges: [{ range: { start: { line, character: 0 }, end: { line, character: 0 } }, text: added }],
        });
      }
      const final = await waitFor(() => session.diagnostics.find((p) => p.version === 21), 'diagnostics of version 21');
      assert.equal(final.diagnostics.length, engine.check(text, {}).length);
      assert.equal(final.diagnostics.filter((d) => d.code === 'TPU401').length, 21);
    } finally {
      session.close();
    }
  });

  it('hover on a diagnostic shows its rule documentation; close clears diagnostics', async () => {
    const session = connect();
    try {
      await initialize(session.client);
      const diagnostics = await open(session);
      const cuda = diagnostics.find((d) => d.code === 'TPU401');
      assert.ok(cuda);
      const hover = await session.client.sendRequest<{ contents: { kind: string; value: string } }>('textDocument/hover', {
        textDocument: { uri: URI },
        position: cuda.range.start,
      });
      assert.equal(hover.contents.kind, 'markdown');
      assert.match(hover.contents.value, /^# TPU401 /);
      assert.match(hover.contents.value, /## What it does/);
      const nothing = await session.client.sendRequest('textDocument/hover', { textDocument: { uri: URI }, position: { line: 0, character: 0 } });
      assert.equal(nothing, null);

      const before = session.diagnostics.length;
      await session.client.sendNotification('textDocument/didClose', { textDocument: { uri: URI } });
      const cleared = await waitFor(() => session.diagnostics.slice(before).find((p) => p.uri === URI), 'diagnostics after close');
      assert.deepEqual(cleared.diagnostics, []);
    } finally {
      session.close();
    }
  });

  it('a notebook is checked as one module, its findings published per cell', async () => {
    const session = connect();
    try {
      await initialize(session.client, { select: ['TPU401'] });
      const cell = (n: number) => `vscode-notebook-cell:/work/nb.ipynb#cell${n}`;
      await session.client.sendNotification('notebookDocument/didOpen', {
        notebookDocument: {
          uri: 'file:///work/nb.ipynb',
          notebookType: 'jupyter-notebook',
          version: 1,
          cells: [
            { kind: 2, document: cell(1) },
            { kind: 1, document: cell(2) },
            { kind: 2, document: cell(3) },
          ],
        },
        cellTextDocuments: [
          { uri: cell(1), languageId: 'python', version: 1, text: '%pip install torch_xla\nimport torch\nimport torch_xla\n' },
          { uri: cell(2), languageId: 'markdown', version: 1, text: '# Notes\n' },
          { uri: cell(3), languageId: 'python', version: 1, text: 'x = torch.ones(2).to("cuda")\n' },
        ],
      });
      const third = await waitFor(() => session.diagnostics.find((p) => p.uri === cell(3)), 'diagnostics of the third cell');
      assert.deepEqual(
        third.diagnostics.map((d) => [d.code, d.range.start.line]),
        [['TPU401', 0]],
      );
      assert.deepEqual(session.diagnostics.find((p) => p.uri === cell(1))?.diagnostics, []);
    } finally {
      session.close();
    }
  });

  it('unknown rule codes in settings are shown, not fatal; exit ends the pump', async () => {
    const session = connect();
    try {
      await initialize(session.client, { select: ['NOPE9'] });
      const diagnostics = await open(session);
      assert.ok(Array.isArray(diagnostics));
      await waitFor(() => session.shown.find((message) => message.includes('NOPE9')), 'a message naming the bad code');
      await session.client.sendRequest('shutdown');
      await session.client.sendNotification('exit');
      await waitFor(() => (session.exited() ? true : undefined), 'the pump to stop');
    } finally {
      session.close();
    }
  });

  it('a server that throws (a trapped panic) is reported once and handed no further message', async () => {
    const channel = new MessageChannel();
    const handled: string[] = [];
    // Throws like a trapped WebAssembly instance: on the second message and on every later one.
    const trapping: WasmLanguageServer = {
      handle(message: string): string {
        handled.push((JSON.parse(message) as { method: string }).method);
        if (handled.length >= 2) throw new Error('unreachable executed');
        return '[]';
      },
      idle: () => '[]',
      hasPendingWork: () => false,
      isShuttingDown: () => false,
    };
    let exited = false;
    startServer(new BrowserMessageReader(channel.port1), new BrowserMessageWriter(channel.port1), trapping, () => {
      exited = true;
    });
    const client = createMessageConnection(new ClientReader(channel.port2), new ClientWriter(channel.port2));
    const crashes: { message: string }[] = [];
    client.onNotification(SERVER_CRASHED, (params: { message: string }) => {
      crashes.push(params);
    });
    client.listen();
    try {
      for (const method of ['first', 'second', 'third']) await client.sendNotification(method, {});
      await waitFor(() => crashes[0], 'the crash notification');
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(crashes, [{ message: 'unreachable executed' }]);
      assert.deepEqual(handled, ['first', 'second'], 'nothing is handed to a crashed server');
      assert.equal(exited, false, 'the worker stays for the extension to replace');
    } finally {
      client.dispose();
      channel.port1.close();
      channel.port2.close();
    }
  });
});
