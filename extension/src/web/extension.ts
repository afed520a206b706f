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

/** `new Worker(url)`: the extension's TypeScript settings have no DOM lib. */
type WorkerConstructor = new (url: string) => ConstructorParameters<typeof LanguageClient>[3];

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const settingReader = () => vscodeapi.settingReader(vscodeapi.firstWorkspaceFolder());
  const workerUri = vscode.Uri.joinPath(context.extensionUri, 'extension', 'out', 'web', 'worker.js');
  const WorkerClass = (globalThis as unknown as { Worker: WorkerConstructor }).Worker;
  const worker = new WorkerClass(workerUri.toString(true));
  const clientOptions: LanguageClientOptions = {
    // Any scheme: on the web, files live in virtual file systems (vscode-vfs, vscode-test-web, …).
    // Notebook cells: the server advertises notebookDocumentSync, so the client sends whole
    // notebooks; this filter routes the cells' requests to the server too (as on the desktop).
    documentSelector: [{ language: 'python' }, { notebook: '*', language: 'python' }],
    diagnosticCollectionName: CLIENT_ID,
    initializationOptions: initializationOptions(readSettings(settingReader())),
  };
  const running = new LanguageClient(CLIENT_ID, CLIENT_NAME, clientOptions, worker);
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
