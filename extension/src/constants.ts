/**
 * Identifiers and paths shared by the extension's modules. Nothing here imports `vscode`, so the
 * unit tests can load it outside the editor.
 */

/** The language client's id. It is also the settings section: `vscode-languageclient` reads
 * `tpulint.trace.server` from it, and every setting is `tpulint.*`. */
export const CLIENT_ID = 'tpulint';

/** Name of the output channel the server logs to, and of the client in messages. */
export const CLIENT_NAME = 'TPU Lint';

/** The `source` the server puts on every diagnostic, used to find ours among other linters'. */
export const DIAGNOSTIC_SOURCE = 'tpulint';

/** Code action kind of the server's "fix all" action, for `editor.codeActionsOnSave`. */
export const FIX_ALL_KIND = 'source.fixAll.tpulint';

/** Name of the server executable, bundled with the extension and looked up on `PATH`. */
export function serverExecutableName(platform: NodeJS.Platform): string {
  return platform === 'win32' ? 'tpulint.exe' : 'tpulint';
}

/** Where the platform-specific VSIX carries the server binary, relative to the extension's root
 * (the folder holding `package.json`); `npm run package` copies it there. */
export function bundledServerRelativePath(platform: NodeJS.Platform): string[] {
  return ['extension', 'bin', serverExecutableName(platform)];
}

/** Arguments that make the `tpulint` binary speak LSP over stdio. */
export const SERVER_ARGS = ['server'];

/** URI scheme of the read-only documents the extension shows (environment report, rule docs). */
export const REPORT_SCHEME = 'tpulint-report';

/** Extension id of the Python extension, whose active interpreter the environment check follows. */
export const PYTHON_EXTENSION_ID = 'ms-python.python';

/** Ids of the commands the extension contributes (see `contributes.commands` in package.json). */
export const Commands = {
  fixAll: 'tpulint.fixAll',
  restartServer: 'tpulint.restartServer',
  showServerLogs: 'tpulint.showServerLogs',
  showRuleDocumentation: 'tpulint.showRuleDocumentation',
  checkTpuEnvironment: 'tpulint.checkTpuEnvironment',
  selectInterpreter: 'tpulint.selectInterpreter',
  showEnvironmentReport: 'tpulint.showEnvironmentReport',
  traceRun: 'tpulint.traceRun',
} as const;
