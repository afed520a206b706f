/**
 * Which Python interpreter the environment check inspects.
 *
 * The order, first set wins:
 * 1. the `tpulint.python.interpreter` setting (trusted workspaces only: VS Code drops a
 *    workspace's value for this restricted setting while the workspace is untrusted);
 * 2. the interpreter picked with "TPU Lint: Select Python Interpreter for Environment Check"
 *    (remembered per workspace);
 * 3. the Python extension's active interpreter for the file, when `ms-python.python` is
 *    installed (through its exported `environments` API);
 * 4. otherwise the user is asked to pick one.
 */

export type InterpreterSource = 'setting' | 'picked' | 'python extension';

export interface InterpreterChoice {
  path: string;
  source: InterpreterSource;
}

/** Pure part of the order above; `undefined` means "ask the user". */
export function chooseInterpreter(candidates: {
  setting: string;
  picked: string | undefined;
  pythonExtension: string | undefined;
}): InterpreterChoice | undefined {
  if (candidates.setting.trim()) return { path: candidates.setting.trim(), source: 'setting' };
  if (candidates.picked) return { path: candidates.picked, source: 'picked' };
  if (candidates.pythonExtension) return { path: candidates.pythonExtension, source: 'python extension' };
  return undefined;
}
