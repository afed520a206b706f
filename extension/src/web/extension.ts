/**
 * Entry of the extension in VS Code for the web (package.json `browser`). No process can be
 * started there, so the language server is a web worker running `tpulint server`'s own protocol
 * logic compiled to WebAssembly (`worker.ts`): the same diagnostics, code actions, fixes and
 * hovers, for files and notebooks, and no environment check (its commands and walkthrough are
 * hidden with `!isWeb` in package.json). If the worker's server crashes (a panic aborts the
 * module), a new worker is started and the client replays the open documents to it: the user is
 * told once, and after `MAX_RESTARTS` crashes the server stays stopped.
 */
import * as vscode from 'vscode';
import {
  BrowserMessageReader,
  BrowserMessageWriter,
  ExecuteCommandRequest,
  HoverRequest,
  LanguageClient,
  type LanguageClientOptions,
  type MessageTransports,
} from 'vscode-languageclient/browser';
import { CLIENT_ID, CLIENT_NAME, Commands, DIAGNOSTIC_SOURCE } from '../constants';
import { APPLY_AUTOFIX, type ApplyAutofixArguments } from '../lspExt';
import { ReportView } from '../reportView';
import { configurationImpact, initializationOptions, readSettings, toServerSettings } from '../settings';
import * as vscodeapi from '../vscodeapi';
import { SERVER_CRASHED } from './server';

/** Crashes after which the server is started again; one more and it stays stopped (a document that
 * crashes it on every check would otherwise restart it forever). */
const MAX_RESTARTS = 3;

let client: LanguageClient | undefined;

/**
 * The part of a DOM `Worker` the language client and this file use. The extension's TypeScript
 * settings have no DOM lib, so the library's own `Worker` type does not resolve (it is `any`).
 */
interface ServerWorker {
  postMessage(message: unknown): void;
  addEventListener(type: 'error', listener: (event: unknown) => void): void;
  onmessage: ((event: { data: unknown }) => void) | null;
  terminate(): void;
}
type WorkerConstructor = new (url: string) => ServerWorker;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const settingReader = () => vscodeapi.settingReader(vscodeapi.firstWorkspaceFolder());
  const workerScript = vscode.Uri.joinPath(context.extensionUri, 'extension', 'out', 'web', 'worker.js');
  let workerUrl: Promise<string> | undefined;
  let worker: ServerWorker | undefined;
  // The server options (version 11 takes them before the client options): a fresh worker on every
  // start of the client, the first and each restart; the previous one ends. (The library's `Worker`
  // type is unnamed without the DOM lib, so the compiler checks neither the order nor the type:
  // the web end-to-end test, tests/vscode-e2e/cs-web.js, does.) The transports are returned rather
  // than the worker: the client tells the two apart with `instanceof Worker`, and VS Code's web
  // worker host replaces the global `Worker` with a wrapper function the real worker is no instance of.
  const startServer = async (): Promise<MessageTransports> => {
    workerUrl ??= workerBlobUrl(workerScript);
    const url = await workerUrl;
    worker?.terminate();
    const WorkerClass = (globalThis as unknown as { Worker: WorkerConstructor }).Worker;
    const started = new WorkerClass(url);
    worker = started;
    return { reader: new BrowserMessageReader(started), writer: new BrowserMessageWriter(started) };
  };
  const clientOptions: LanguageClientOptions = {
    // Any scheme: on the web, files live in virtual file systems (vscode-vfs, vscode-test-web, …).
    // Notebook cells: the server advertises notebookDocumentSync, so the client sends whole
    // notebooks; this filter routes the cells' requests to the server too (as on the desktop).
    documentSelector: [{ language: 'python' }, { notebook: '*', language: 'python' }],
    diagnosticCollectionName: CLIENT_ID,
    initializationOptions: initializationOptions(readSettings(settingReader())),
  };
  const running = new LanguageClient(CLIENT_ID, CLIENT_NAME, startServer, clientOptions);
  client = running;
  let crashes = 0;
  running.onNotification(SERVER_CRASHED, (params: { message?: string }) => {
    crashes += 1;
    const reason = params.message ?? 'unknown error';
    if (crashes > MAX_RESTARTS) {
      void vscode.window.showErrorMessage(`TPU Lint: the language server crashed again (${reason}) and is stopped. Reload the window to start it.`);
      void running.stop().finally(() => worker?.terminate());
      return;
    }
    if (crashes === 1) void vscode.window.showWarningMessage(`TPU Lint: the language server crashed (${reason}) and was restarted.`);
    // The crashed server answers nothing, so stopping waits for the shutdown request to time out.
    void running.stop().then(() => running.start());
  });
  const reportView = new ReportView();
  context.subscriptions.push(
    { dispose: () => worker?.terminate() },
    reportView,
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (configurationImpact((section) => event.affectsConfiguration(section)) === 'none') return;
      const settings = toServerSettings(readSettings(settingReader()));
      void running.sendNotification('workspace/didChangeConfiguration', { settings });
    }),
    vscode.commands.registerCommand(Commands.fixAll, () => fixAll(running)),
    vscode.commands.registerCommand(Commands.showRuleDocumentation, () => showRuleDocumentation(running, reportView)),
  );
  await running.start();
}

/**
 * A blob URL of the language server's worker script. VS Code's web worker extension host refuses
 * `new Worker()` on an extension file served by a remote (`vscode-remote:` URIs: code-server,
 * Codespaces, tunnels), but its `fetch` resolves those URIs; a worker started from a blob URL runs
 * wherever the extension is served from (vscode.dev's CDN included). The script needs nothing
 * beside it: the wasm module and the rule docs are bundled into it.
 */
async function workerBlobUrl(script: vscode.Uri): Promise<string> {
  const response = await fetch(script.toString(true));
  if (!response.ok) throw new Error(`TPU Lint: could not load its language server (${script.toString(true)}: HTTP ${response.status})`);
  const source = new Blob([await response.arrayBuffer()], { type: 'text/javascript' });
  return URL.createObjectURL(source);
}

export async function deactivate(): Promise<void> {
  await client?.dispose();
  client = undefined;
}

/** Fix All Issues: the server computes the edit and sends it back through `workspace/applyEdit`. */
async function fixAll(running: LanguageClient): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== 'python') {
    void vscode.window.showInformationMessage('TPU Lint: open a Python file to fix.');
    return;
  }
  const argument: ApplyAutofixArguments = { uri: editor.document.uri.toString(), version: editor.document.version };
  try {
    await running.sendRequest(ExecuteCommandRequest.type, { command: APPLY_AUTOFIX, arguments: [argument] });
  } catch (error) {
    void vscode.window.showErrorMessage(`TPU Lint: Fix All failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Shows the documentation of the rule behind the diagnostic under the cursor (the server's
 * hover on a diagnostic is its rule's documentation). */
async function showRuleDocumentation(running: LanguageClient, reportView: ReportView): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return;
  const position = editor.selection.active;
  const diagnostic = vscode.languages
    .getDiagnostics(editor.document.uri)
    .find((candidate) => candidate.source === DIAGNOSTIC_SOURCE && candidate.range.start.line <= position.line && position.line <= candidate.range.end.line);
  if (!diagnostic) {
    void vscode.window.showInformationMessage('TPU Lint: no tpulint diagnostic under the cursor.');
    return;
  }
  const hover = await running.sendRequest(HoverRequest.type, {
    textDocument: { uri: running.code2ProtocolConverter.asUri(editor.document.uri) },
    position: running.code2ProtocolConverter.asPosition(diagnostic.range.start),
  });
  const contents = hover?.contents;
  const markdown = contents && typeof contents === 'object' && 'value' in contents ? contents.value : undefined;
  const code = typeof diagnostic.code === 'object' ? String(diagnostic.code.value) : String(diagnostic.code ?? 'rule');
  if (markdown) await reportView.show(`${code} documentation`, markdown);
}
