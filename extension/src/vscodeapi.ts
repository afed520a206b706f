/**
 * One-line wrappers over the `vscode` API calls the extension makes. Modules that hold logic
 * (binary resolution, settings mapping, interpreter choice) take plain values or these
 * functions, so they can be unit-tested without an editor.
 */
import * as vscode from 'vscode';
import { CLIENT_ID } from './constants';
import type { SettingReader } from './settings';

/** Settings with `"scope": "window"` in package.json: one value per window, read without a
 * resource (VS Code warns when a window-scoped setting is read for a resource). */
const WINDOW_SCOPED = new Set(['server.logLevel', 'trace.server']);

/** Reads the `tpulint` settings the user set for `scope`: the effective value of a key set in
 * user, workspace or folder settings (language-specific ones included), `undefined` for a key
 * set nowhere, so that package.json defaults never reach the server as if they were choices. */
export function settingReader(scope?: vscode.ConfigurationScope): SettingReader {
  const configuration = vscode.workspace.getConfiguration(CLIENT_ID, scope);
  const windowConfiguration = vscode.workspace.getConfiguration(CLIENT_ID);
  return (key) => {
    const section = WINDOW_SCOPED.has(key) ? windowConfiguration : configuration;
    return isSetByUser(section.inspect(key)) ? section.get(key) : undefined;
  };
}

function isSetByUser(inspected: ReturnType<vscode.WorkspaceConfiguration['inspect']>): boolean {
  if (!inspected) return false;
  const { globalValue, workspaceValue, workspaceFolderValue, globalLanguageValue, workspaceLanguageValue, workspaceFolderLanguageValue } = inspected;
  return [globalValue, workspaceValue, workspaceFolderValue, globalLanguageValue, workspaceLanguageValue, workspaceFolderLanguageValue].some(
    (value) => value !== undefined,
  );
}

export function isWorkspaceTrusted(): boolean {
  return vscode.workspace.isTrusted;
}

export function onDidGrantWorkspaceTrust(listener: () => unknown): vscode.Disposable {
  return vscode.workspace.onDidGrantWorkspaceTrust(listener);
}

export function onDidChangeConfiguration(listener: (event: vscode.ConfigurationChangeEvent) => unknown): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration(listener);
}

export function firstWorkspaceFolder(): vscode.WorkspaceFolder | undefined {
  return vscode.workspace.workspaceFolders?.[0];
}

export function registerCommand(command: string, callback: (...args: unknown[]) => unknown): vscode.Disposable {
  return vscode.commands.registerCommand(command, callback);
}

export function executeCommand<T = unknown>(command: string, ...args: unknown[]): Thenable<T> {
  return vscode.commands.executeCommand<T>(command, ...args);
}

export function createLogOutputChannel(name: string): vscode.LogOutputChannel {
  return vscode.window.createOutputChannel(name, { log: true });
}

export function showErrorMessage<T extends string>(message: string, ...items: T[]): Thenable<T | undefined> {
  return vscode.window.showErrorMessage(message, ...items);
}

export function showWarningMessage<T extends string>(message: string, ...items: T[]): Thenable<T | undefined> {
  return vscode.window.showWarningMessage(message, ...items);
}

export function showInformationMessage<T extends string>(message: string, ...items: T[]): Thenable<T | undefined> {
  return vscode.window.showInformationMessage(message, ...items);
}

export function activeTextEditor(): vscode.TextEditor | undefined {
  return vscode.window.activeTextEditor;
}

export function getDiagnostics(uri: vscode.Uri): vscode.Diagnostic[] {
  return vscode.languages.getDiagnostics(uri);
}

export function getExtension<T>(id: string): vscode.Extension<T> | undefined {
  return vscode.extensions.getExtension<T>(id);
}
