/**
 * Finds the Python interpreter the environment check inspects: the Python extension's active
 * one, or one the user picks (remembered per workspace). The order is in `interpreterOrder.ts`.
 */
import * as path from 'node:path';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { PYTHON_EXTENSION_ID } from './constants';
import { chooseInterpreter, type InterpreterChoice } from './interpreterOrder';
import * as vscodeapi from './vscodeapi';

/** The subset of the Python extension's exported API used here (the same shape that
 * `@vscode/python-extension` types), read defensively since older versions lack parts of it. */
interface PythonExtensionApi {
  environments?: {
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
    getActiveEnvironmentPath(resource?: vscode.Uri | vscode.WorkspaceFolder): { id: string; path: string } | undefined;
    resolveEnvironment(
      environment: { id: string; path: string } | string,
    ): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  };
  settings?: {
    getExecutionDetails?(resource?: vscode.Uri): { execCommand: string[] | undefined };
  };
}

/** The Python extension's active interpreter for `resource`, if the extension is installed. */
export async function pythonExtensionInterpreter(resource: vscode.Uri | undefined, log: vscode.LogOutputChannel): Promise<string | undefined> {
  const extension = vscodeapi.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
  if (!extension) return undefined;
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    const environmentPath = api?.environments?.getActiveEnvironmentPath(resource);
    if (environmentPath) {
      const resolved = await api?.environments?.resolveEnvironment(environmentPath);
      return resolved?.executable.uri?.fsPath ?? environmentPath.path;
    }
    return api?.settings?.getExecutionDetails?.(resource)?.execCommand?.[0];
  } catch (error) {
    log.warn(`Could not read the Python extension's interpreter: ${String(error)}`);
    return undefined;
  }
}

/** Calls `listener` when the Python extension's active interpreter changes (the environment
 * whose tpulint `importStrategy: fromEnvironment` runs). `undefined` without the extension. */
export async function onDidChangePythonInterpreter(listener: () => unknown, log: vscode.LogOutputChannel): Promise<vscode.Disposable | undefined> {
  const extension = vscodeapi.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
  if (!extension) return undefined;
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    return api?.environments?.onDidChangeActiveEnvironmentPath?.(() => listener());
  } catch (error) {
    log.warn(`Could not follow the Python extension's interpreter: ${String(error)}`);
    return undefined;
  }
}

const PICKED_KEY = 'tpulint.pickedInterpreter';

export class InterpreterSelector {
  constructor(
    private readonly workspaceState: vscode.Memento,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** The interpreter to check, asking the user only when nothing else names one. */
  async resolve(resource: vscode.Uri | undefined, setting: string): Promise<InterpreterChoice | undefined> {
    const choice = chooseInterpreter({
      setting,
      picked: this.workspaceState.get<string>(PICKED_KEY),
      pythonExtension: await pythonExtensionInterpreter(resource, this.log),
    });
    if (choice) return choice;
    const picked = await this.pick();
    return picked ? { path: picked, source: 'picked' } : undefined;
  }

  /** Shows a quick pick of likely interpreters plus "Enter path…"; remembers the choice. */
  async pick(): Promise<string | undefined> {
    interface Item extends vscode.QuickPickItem {
      interpreter?: string;
      action?: 'enter' | 'browse';
    }
    const items: Item[] = candidateInterpreters().map((candidate) => ({
      label: candidate.label,
      description: candidate.path,
      interpreter: candidate.path,
    }));
    items.push({ label: '$(edit) Enter interpreter path…', action: 'enter' }, { label: '$(folder) Browse…', action: 'browse' });
    const current = this.workspaceState.get<string>(PICKED_KEY);
    const item = await vscode.window.showQuickPick(items, {
      title: 'Python interpreter for the TPU environment check',
      placeHolder: current ? `Current: ${current}` : 'Pick the interpreter your training code runs with',
    });
    if (!item) return undefined;
    let interpreter = item.interpreter;
    if (item.action === 'enter') {
      interpreter = await vscode.window.showInputBox({
        title: 'Python interpreter for the TPU environment check',
        prompt: 'Absolute path of a python executable',
        value: current,
        validateInput: (value) => (path.isAbsolute(value.trim()) ? undefined : 'Enter an absolute path'),
      });
    } else if (item.action === 'browse') {
      const uris = await vscode.window.showOpenDialog({ canSelectMany: false, title: 'Python interpreter', openLabel: 'Select' });
      interpreter = uris?.[0]?.fsPath;
    }
    interpreter = interpreter?.trim();
    if (!interpreter) return undefined;
    await this.workspaceState.update(PICKED_KEY, interpreter);
    this.log.info(`Environment check interpreter set to ${interpreter}`);
    return interpreter;
  }
}

/** Interpreters worth offering: virtual environments in the workspace folders, then `python3`
 * and `python` on PATH. Only existing files are listed. */
function candidateInterpreters(): { label: string; path: string }[] {
  const found: { label: string; path: string }[] = [];
  const seen = new Set<string>();
  const add = (label: string, candidate: string) => {
    if (seen.has(candidate) || !fs.existsSync(candidate)) return;
    seen.add(candidate);
    found.push({ label, path: candidate });
  };
  const binary = process.platform === 'win32' ? path.join('Scripts', 'python.exe') : path.join('bin', 'python');
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    for (const venv of ['.venv', 'venv', 'env']) {
      add(`$(folder) ${venv} in ${folder.name}`, path.join(folder.uri.fsPath, venv, binary));
    }
  }
  for (const directory of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    for (const name of ['python3', 'python']) {
      add(`$(terminal) ${name} on PATH`, path.join(directory, process.platform === 'win32' ? `${name}.exe` : name));
    }
  }
  return found;
}
