/**
 * Extension-host tests: run INSIDE VS Code's extension host (code-server's here) through the
 * `extensionTestsPath` contract, against the real extension and the real `tpulint server`.
 * The workspace is a copy of tests/vscode-e2e/workspace with a tiny venv in `.venv`.
 * Tests run in order and share the editor state; each cleans up what it changed.
 */
import assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { TpulintApi } from '../../src/extension';
import type { EnvironmentReport } from '../../src/lspExt';

const EXTENSION_ID = 'tpulint.tpulint';
const log = (...parts: unknown[]) => console.log('[ext-test]', ...parts);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

function ours(uri: vscode.Uri): vscode.Diagnostic[] {
  return vscode.languages.getDiagnostics(uri).filter((diagnostic) => diagnostic.source === 'tpulint');
}

function code(diagnostic: vscode.Diagnostic): string {
  return typeof diagnostic.code === 'object' ? String(diagnostic.code.value) : String(diagnostic.code);
}

/** Codes with 1-based line numbers, sorted: `['TPU401:7', ...]`. */
function summary(uri: vscode.Uri): string[] {
  return ours(uri)
    .map((diagnostic) => `${code(diagnostic)}:${diagnostic.range.start.line + 1}`)
    .sort();
}

const workspaceFolder = () => vscode.workspace.workspaceFolders![0].uri;
const modelUri = () => vscode.Uri.joinPath(workspaceFolder(), 'model.py');

async function openModel(): Promise<vscode.TextEditor> {
  const document = await vscode.workspace.openTextDocument(modelUri());
  return vscode.window.showTextDocument(document);
}

async function setSetting(section: string, key: string, value: unknown): Promise<void> {
  await vscode.workspace.getConfiguration(section).update(key, value, vscode.ConfigurationTarget.Workspace);
}

/** Findings the fixture must produce. Other rules may flag it too as rules are added, so the
 * tests check these are present rather than that nothing else is. */
const EXPECTED_INITIAL = ['TPU101:16', 'TPU401:7', 'TPU410:8', 'TPU601:15'];
const hasAll = (entries: string[], wanted: string[]) => wanted.every((entry) => entries.includes(entry));
const hasCode = (uri: vscode.Uri, wanted: string) => summary(uri).some((entry) => entry.startsWith(`${wanted}:`));

const tests: [string, () => Promise<void>][] = [
  [
    'activates and runs the server bundled in the VSIX',
    async () => {
      const extension = vscode.extensions.getExtension<TpulintApi>(EXTENSION_ID);
      assert.ok(extension, 'extension installed');
      const api = await extension.activate();
      const running = await until('server running', () => api.server.runningServer);
      log('server:', JSON.stringify(running));
      assert.equal(running.source, 'bundled');
      assert.ok(running.path.endsWith('/extension/bin/tpulint'), running.path);
    },
  ],
  [
    'publishes the expected diagnostics for model.py',
    async () => {
      await openModel();
      const got = await until('diagnostics', () => {
        const current = summary(modelUri());
        return hasAll(current, EXPECTED_INITIAL) && current;
      });
      log('diagnostics:', JSON.stringify(got));
      const cuda = ours(modelUri()).find((diagnostic) => code(diagnostic) === 'TPU401')!;
      assert.equal(cuda.severity, vscode.DiagnosticSeverity.Error);
      assert.ok(typeof cuda.code === 'object' && cuda.code.target, 'diagnostic links to its rule documentation');
    },
  ],
  [
    'applies a quick fix and clears its diagnostic',
    async () => {
      const editor = await openModel();
      const markStep = ours(modelUri()).find((diagnostic) => code(diagnostic) === 'TPU601')!;
      const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>(
        'vscode.executeCodeActionProvider',
        modelUri(),
        markStep.range,
        vscode.CodeActionKind.QuickFix.value,
        10, // resolve up to 10 actions, so that lazily computed edits are filled in
      );
      log('quick fixes:', JSON.stringify(actions.map((action) => [action.title, action.isPreferred ?? false, action.diagnostics?.map(code)])));
      const fix = actions.find((action) => action.isPreferred && action.title.includes('torch_xla.sync'));
      assert.ok(fix?.edit, 'a preferred quick fix with an edit for TPU601');
      assert.ok(await vscode.workspace.applyEdit(fix.edit));
      assert.equal(editor.document.lineAt(14).text, '    torch_xla.sync()');
      await until('TPU601 cleared', () => !hasCode(modelUri(), 'TPU601'));
    },
  ],
  [
    'sends lint settings to the running server without a restart',
    async () => {
      const api = vscode.extensions.getExtension<TpulintApi>(EXTENSION_ID)!.exports;
      const before = api.server.languageClient;
      await setSetting('tpulint', 'lint.ignore', ['TPU101']);
      await until('TPU101 ignored', () => !hasCode(modelUri(), 'TPU101'));
      assert.equal(api.server.languageClient, before, 'same client, no restart');
      await setSetting('tpulint', 'lint.ignore', undefined);
      await until('TPU101 back', () => hasCode(modelUri(), 'TPU101'));
    },
  ],
  [
    'Fix All applies safe fixes, and unsafe ones only with tpulint.fix.unsafe',
    async () => {
      const editor = await openModel();
      await vscode.commands.executeCommand('tpulint.fixAll');
      await until('pin_memory removed', () => !editor.document.getText().includes('pin_memory'));
      assert.ok(editor.document.getText().includes('torch.device("cuda")'), 'unsafe TPU401 fix not applied by default');
      await setSetting('tpulint', 'fix.unsafe', true);
      // The server applies a settings change asynchronously (it pulls workspace/configuration
      // first), so a Fix All sent at once may still see the old settings: retry for a while.
      await until('cuda replaced', async () => {
        await vscode.commands.executeCommand('tpulint.fixAll');
        return editor.document.getText().includes('torch.device("xla")');
      });
      await setSetting('tpulint', 'fix.unsafe', undefined);
      await until('TPU401, TPU410, TPU601 fixed', () => !['TPU401', 'TPU410', 'TPU601'].some((wanted) => hasCode(modelUri(), wanted)));
    },
  ],
  [
    'fixes on save with editor.codeActionsOnSave source.fixAll.tpulint',
    async () => {
      const uri = vscode.Uri.joinPath(workspaceFolder(), 'on_save.py');
      await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode('import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n'));
      await setSetting('editor', 'codeActionsOnSave', { 'source.fixAll.tpulint': 'explicit' });
      const editor = await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
      await until('TPU601 on on_save.py', () => summary(uri).includes('TPU601:3'));
      await editor.edit((builder) => builder.insert(new vscode.Position(1, 0), '# edited\n'));
      await vscode.commands.executeCommand('workbench.action.files.save');
      await until('fixed on save', () => editor.document.getText().includes('torch_xla.sync()') && !editor.document.isDirty);
      await setSetting('editor', 'codeActionsOnSave', undefined);
    },
  ],
  [
    'shows the documentation of the rule under the cursor',
    async () => {
      const editor = await openModel();
      const itemCall = ours(modelUri()).find((diagnostic) => code(diagnostic) === 'TPU101')!;
      editor.selection = new vscode.Selection(itemCall.range.start, itemCall.range.start);
      await vscode.commands.executeCommand('tpulint.showRuleDocumentation');
      const document = await until('rule documentation document', () =>
        vscode.workspace.textDocuments.find((candidate) => candidate.uri.scheme === 'tpulint-report' && candidate.uri.path.includes('TPU101')),
      );
      const text = document.getText();
      log('rule docs starts:', JSON.stringify(text.slice(0, 80)));
      assert.match(text, /TPU101/);
      assert.match(text, /## Why is this bad\?/);
    },
  ],
  [
    'checks the TPU environment of the Python extension interpreter',
    async () => {
      const api = vscode.extensions.getExtension<TpulintApi>(EXTENSION_ID)!.exports;
      if (!api.server.supportsCommand('tpulint.checkEnvironment')) {
        throw new Skip('the server does not offer tpulint.checkEnvironment yet');
      }
      const report = await vscode.commands.executeCommand<EnvironmentReport | undefined>('tpulint.checkTpuEnvironment');
      assert.ok(report, 'the check ran');
      log('environment verdict:', report.verdict, '|', report.summary, '| fixes:', JSON.stringify(report.fixes));
      assert.equal(report.verdict, 'not_ready', 'a venv without torch cannot run PyTorch on TPU');
      const interpreter = vscode.Uri.joinPath(workspaceFolder(), '.venv', 'bin', 'python').fsPath;
      const document = await until('report document', () =>
        vscode.workspace.textDocuments.find((candidate) => candidate.uri.scheme === 'tpulint-report' && candidate.uri.path.includes('TPU Environment Report')),
      );
      assert.ok(document.getText().includes(interpreter), 'report names the interpreter from the Python extension');
      assert.ok(report.fixes.length > 0, 'the report suggests a fix');
    },
  ],
  [
    'analyses a Jupyter notebook as one module and fixes a cell',
    async () => {
      const uri = vscode.Uri.joinPath(workspaceFolder(), 'notebook.ipynb');
      const notebook = await vscode.workspace.openNotebookDocument(uri);
      await vscode.window.showNotebookDocument(notebook);
      const [imports, , step] = notebook.getCells();
      // `xm` is imported in the first cell: the third cell's `xm.mark_step()` is TPU601, on the
      // cell's own line 3.
      await until('TPU601 in the third cell', () => summary(step.document.uri).includes('TPU601:3'), 30000);
      log('notebook diagnostics:', JSON.stringify(notebook.getCells().map((cell) => summary(cell.document.uri))));
      assert.deepEqual(summary(imports.document.uri), [], 'imports and a %magic line are clean');
      const markStep = ours(step.document.uri).find((diagnostic) => code(diagnostic) === 'TPU601')!;
      const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>(
        'vscode.executeCodeActionProvider',
        step.document.uri,
        markStep.range,
        vscode.CodeActionKind.QuickFix.value,
        10,
      );
      const fix = actions.find((action) => action.isPreferred && action.title.includes('torch_xla.sync'));
      assert.ok(fix?.edit, 'a preferred quick fix with an edit for TPU601 in the cell');
      assert.ok(await vscode.workspace.applyEdit(fix.edit));
      assert.equal(step.document.lineAt(2).text, '    torch_xla.sync()');
      await until('TPU601 cleared in the cell', () => !hasCode(step.document.uri, 'TPU601'));
      await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
    },
  ],
  [
    'restarts the server on command and after a crash',
    async () => {
      const api = vscode.extensions.getExtension<TpulintApi>(EXTENSION_ID)!.exports;
      await vscode.commands.executeCommand('tpulint.restartServer');
      await until('server back after restart', () => api.server.languageClient);
      const editor = await openModel();
      // Kill the server process: the client restarts it under the crash policy.
      const pid = serverPid(api);
      assert.ok(pid, 'server pid known');
      process.kill(pid, 'SIGKILL');
      await until('restarted after crash', () => {
        const current = serverPid(api);
        return current !== undefined && current !== pid;
      }, 30000);
      await editor.edit((builder) => builder.insert(new vscode.Position(0, 0), '# after crash\n'));
      await until('diagnostics after crash', () => summary(modelUri()).includes('TPU101:17'), 30000);
      await vscode.commands.executeCommand('workbench.action.files.revert');
    },
  ],
];

/** The server's pid, from the language client's child process (not public API, test-only). */
function serverPid(api: TpulintApi): number | undefined {
  const client = api.server.languageClient as unknown as { _serverProcess?: { pid?: number } } | undefined;
  return client?._serverProcess?.pid;
}

/** Thrown by a test whose feature the server under test lacks; reported, never silent. */
class Skip extends Error {}

export async function run(): Promise<void> {
  let passed = 0;
  let skipped = 0;
  const failures: string[] = [];
  for (const [index, [name, test]] of tests.entries()) {
    const started = Date.now();
    try {
      await test();
      passed++;
      log(`ok ${index + 1} - ${name} (${Date.now() - started} ms)`);
    } catch (error) {
      if (error instanceof Skip) {
        skipped++;
        log(`ok ${index + 1} - ${name} # SKIP ${error.message}`);
        continue;
      }
      failures.push(name);
      log(`not ok ${index + 1} - ${name}: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
    }
  }
  log(`${passed} passed, ${failures.length} failed, ${skipped} skipped`);
  if (failures.length > 0) throw new Error(`failed: ${failures.join('; ')}`);
}
