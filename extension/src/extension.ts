/**
 * Entry point of the TPU Lint extension: a thin client of `tpulint server`. It wires the
 * language client, the commands and the environment check; everything it shows (diagnostics,
 * fixes, rule docs, the environment report) comes from the server.
 */
import * as path from 'node:path';
import type * as vscode from 'vscode';
import { fixAll, showRuleDocumentation } from './commands';
import { Commands } from './constants';
import { EnvironmentCheck } from './envCheck';
import { InterpreterSelector } from './interpreter';
import { ReportView } from './reportView';
import { ServerManager } from './server';
import { TraceRun } from './traceRun';
import * as vscodeapi from './vscodeapi';

/** What `activate` returns, for the extension-host tests and other extensions. */
export interface TpulintApi {
  server: ServerManager;
  environmentCheck: EnvironmentCheck;
  reportView: ReportView;
  traceRun: TraceRun;
}

let server: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<TpulintApi> {
  // package.json sits at the extension's root; the bundle lives in extension/out/.
  const extensionRoot = context.extensionPath ?? path.resolve(__dirname, '..', '..');
  server = new ServerManager(extensionRoot);
  const reportView = new ReportView();
  const interpreters = new InterpreterSelector(context.workspaceState, server.outputChannel);
  const environmentCheck = new EnvironmentCheck(server, reportView, interpreters);
  const traceRun = new TraceRun(server, interpreters);
  const running = server;
  context.subscriptions.push(
    running,
    reportView,
    environmentCheck,
    traceRun,
    vscodeapi.registerCommand(Commands.fixAll, () => fixAll(running)),
    vscodeapi.registerCommand(Commands.restartServer, () => running.restart()),
    vscodeapi.registerCommand(Commands.showServerLogs, () => running.outputChannel.show()),
    vscodeapi.registerCommand(Commands.showRuleDocumentation, () => showRuleDocumentation(running, reportView)),
    vscodeapi.registerCommand(Commands.checkTpuEnvironment, () => environmentCheck.run()),
    vscodeapi.registerCommand(Commands.showEnvironmentReport, () => environmentCheck.showReport()),
    vscodeapi.registerCommand(Commands.selectInterpreter, () => interpreters.pick()),
    vscodeapi.registerCommand(Commands.traceRun, () => traceRun.run()),
  );
  await running.start();
  return { server: running, environmentCheck, reportView, traceRun };
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
