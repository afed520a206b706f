// Test double of ms-python.python's exported API (the `environments` part that
// @vscode/python-extension types): the active interpreter is <first workspace folder>/.venv/bin/python.
// Installed only into the throwaway code-server of the end-to-end tests.
const vscode = require('vscode');

function activeInterpreter() {
  const folder = vscode.workspace.workspaceFolders && vscode.workspace.workspaceFolders[0];
  return folder ? vscode.Uri.joinPath(folder.uri, '.venv', 'bin', 'python').fsPath : undefined;
}

exports.activate = () => ({
  environments: {
    getActiveEnvironmentPath: () => ({ id: activeInterpreter(), path: activeInterpreter() }),
    resolveEnvironment: async (environment) => {
      const path = typeof environment === 'string' ? environment : environment.path;
      return { id: path, path, executable: { uri: vscode.Uri.file(path) } };
    },
  },
});
exports.deactivate = () => {};
