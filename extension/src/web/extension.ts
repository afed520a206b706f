/**
 * Entry of the extension in VS Code for the web (package.json `browser`). No process can be
 * started there, so the language server is a web worker running `tpulint server`'s own protocol
 * logic compiled to WebAssembly (`worker.ts`): the same diagnostics, code actions, fixes and
 * hovers, for files and notebooks, and no environment check (its commands and walkthrough are
 * hidden with `!isWeb` in package.json).
 */
import * as vscode from 'vscode';
import { ExecuteCommandRequest, HoverRequest, LanguageClient, type LanguageClientOptions } from 'vscode-languageclient/browser';
import { CLIENT_ID, CLIENT_NAME, Commands, DIAGNOSTIC_SOURCE } from '../constants';
import { APPLY_AUTOFIX, type ApplyAutofixArguments } from '../lspExt';
import { ReportView } from '../reportView';
import { configurationImpact, initializationOptions, readSettings, toServerSettings } from '../settings';
import * as vscodeapi from '../vscodeapi';

let client: LanguageClient | undefined;

/**
 * The part of a DOM `Worker` the language client uses. The extension's TypeScript settings have no
 * DOM lib, so the client's own `Worker` parameter is untyped: this names what is passed to it.
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
  const worker = await startWorker(vscode.Uri.joinPath(context.extensionUri, 'extension', 'out', 'web', 'worker.js'));
  const clientOptions: LanguageClientOptions = {
    // Any scheme: on the web, files live in virtual file systems (vscode-vfs, vscode-test-web, …).
    // Notebook cells: the server advertises notebookDocumentSync, so the client sends whole
    // notebooks; this filter routes the cells' requests to the server too (as on the desktop).
    documentSelector: [{ language: 'python' }, { notebook: '*', language: 'python' }],
    diagnosticCollectionName: CLIENT_ID,
    initializationOptions: initializationOptions(readSettings(settingReader())),
  };
  // vscode-languageclient 11's browser client takes the server (the worker) before the options. The
  // extension's TypeScript settings have no DOM lib, so `Worker` is untyped there and swapping
  // the two type-checks: the web end-to-end test (tests/vscode-e2e/cs-web.js) is what guards it.
  const running = new LanguageClient(CLIENT_ID, CLIENT_NAME, worker, clientOptions);
  client = running;
  const reportView = new ReportView();
  context.subscriptions.push(
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
 * Starts the language server's worker from its script. VS Code's web worker extension host refuses
 * `new Worker()` on an extension file served by a remote (`vscode-remote:` URIs: code-server,
 * Codespaces, tunnels), but its `fetch` resolves those URIs; so the script is fetched and started
 * from a blob URL, which works wherever the extension is served from (vscode.dev's CDN included).
 * The script needs nothing beside it: the wasm module and the rule docs are bundled into it.
 */
async function startWorker(script: vscode.Uri): Promise<ServerWorker> {
  const response = await fetch(script.toString(true));
  if (!response.ok) throw new Error(`TPU Lint: could not load its language server (${script.toString(true)}: HTTP ${response.status})`);
  const source = new Blob([await response.arrayBuffer()], { type: 'text/javascript' });
  const WorkerClass = (globalThis as unknown as { Worker: WorkerConstructor }).Worker;
  return new WorkerClass(URL.createObjectURL(source));
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
