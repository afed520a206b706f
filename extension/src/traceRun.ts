/**
 * "TPU Lint: Trace a Run": asks for the command to trace (by default the active Python file
 * with the selected interpreter) and runs it in a terminal through `tpulint trace run`, which
 * writes `.tpulint/trace.json`. The server watches that file and republishes the runtime
 * findings; the extension only builds the command line.
 *
 * Tracing runs the workspace's code: it is refused in an untrusted workspace.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { InterpreterSelector } from './interpreter';
import type { ServerManager } from './server';
import { readSettings } from './settings';
import { defaultTracedCommand, traceRunLine } from './traceCommand';
import * as vscodeapi from './vscodeapi';

export class TraceRun implements vscode.Disposable {
  private terminal: vscode.Terminal | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly server: ServerManager,
    private readonly interpreters: InterpreterSelector,
  ) {
    this.disposables.push(
      vscode.window.onDidCloseTerminal((closed) => {
        if (closed === this.terminal) this.terminal = undefined;
      }),
    );
  }

  /** Returns the line sent to the terminal (for tests), or undefined when nothing ran. */
  async run(): Promise<string | undefined> {
    if (!vscodeapi.isWorkspaceTrusted()) {
      void vscodeapi.showWarningMessage('TPU Lint: tracing runs your code, so it is disabled until you trust this workspace.');
      return undefined;
    }
    const document = vscodeapi.activeTextEditor()?.document;
    const resource = document?.uri ?? vscodeapi.firstWorkspaceFolder()?.uri;
    const folder = resource ? vscode.workspace.getWorkspaceFolder(resource) : undefined;
    const cwd = folder?.uri.fsPath ?? (document ? path.dirname(document.uri.fsPath) : undefined);
    let suggestion = '';
    if (document?.languageId === 'python' && document.uri.scheme === 'file') {
      const settings = readSettings(vscodeapi.settingReader(resource));
      const interpreter = await this.interpreters.resolve(resource, settings.pythonInterpreter);
      if (!interpreter) return undefined;
      const script = cwd ? path.relative(cwd, document.uri.fsPath) : document.uri.fsPath;
      suggestion = defaultTracedCommand(interpreter.path, script);
    }
    const command = await vscode.window.showInputBox({
      title: 'TPU Lint: Trace a Run',
      prompt: 'The command to run with PyTorch/XLA and Dynamo logs on (keep the run short: a few steps are enough)',
      value: suggestion,
      validateInput: (value) => (value.trim() ? undefined : 'Enter a command, e.g. python train.py --steps 20'),
    });
    if (!command?.trim()) return undefined;
    if (document?.isDirty) await document.save();
    const serverPath = this.server.runningServer?.path ?? 'tpulint';
    const line = traceRunLine(serverPath, command);
    this.terminal ??= vscode.window.createTerminal({ name: 'TPU Lint: trace', cwd });
    this.terminal.show();
    this.server.outputChannel.info(`Tracing in a terminal: ${line}`);
    this.terminal.sendText(line, true);
    return line;
  }

  dispose(): void {
    this.terminal?.dispose();
    for (const disposable of this.disposables) disposable.dispose();
  }
}
