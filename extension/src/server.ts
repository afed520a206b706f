/**
 * Owns the language client: finds the server binary, starts `tpulint server` over stdio, keeps
 * the server's settings current, and restarts it after a crash (within limits) or on request.
 *
 * Start, stop and restart are queued one after another, so a settings change arriving while the
 * server is starting cannot leave two servers running.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  TransportKind,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { describeAttempts, describeSource, ignoredSettingWarning, resolveServerBinary, type BinarySource, type FileProbe } from './binary';
import { bundledServerRelativePath, CLIENT_ID, CLIENT_NAME, Commands, SERVER_ARGS } from './constants';
import { CrashPolicy } from './crashPolicy';
import { onDidChangePythonInterpreter, pythonExtensionInterpreter } from './interpreter';
import { configurationImpact, initializationOptions, readSettings, toServerSettings } from './settings';
import * as vscodeapi from './vscodeapi';

const SHOW_LOGS = 'Show Logs';
const RESTART = 'Restart Server';
const OPEN_SETTINGS = 'Open Settings';

/** Where the running server came from, for the language status item and the logs. */
export interface RunningServer {
  path: string;
  source: BinarySource;
  version?: string;
}

export class ServerManager implements vscode.Disposable {
  readonly outputChannel: vscode.LogOutputChannel;
  readonly traceChannel: vscode.LogOutputChannel;
  private client: LanguageClient | undefined;
  private running: RunningServer | undefined;
  private readonly crashPolicy = new CrashPolicy();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly statusItem: vscode.LanguageStatusItem;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly stateEmitter = new vscode.EventEmitter<void>();
  /** Set once `importStrategy: fromEnvironment` made us follow the Python extension's interpreter. */
  private followingInterpreter = false;
  /** Fires when the server starts or stops. */
  readonly onDidChangeState = this.stateEmitter.event;

  constructor(private readonly extensionRoot: string) {
    this.outputChannel = vscodeapi.createLogOutputChannel(CLIENT_NAME);
    this.traceChannel = vscodeapi.createLogOutputChannel(`${CLIENT_NAME} Trace`);
    this.statusItem = vscode.languages.createLanguageStatusItem('tpulint.server', { language: 'python' });
    this.statusItem.name = CLIENT_NAME;
    this.statusItem.command = { title: 'Show Logs', command: Commands.showServerLogs };
    this.disposables.push(
      this.outputChannel,
      this.traceChannel,
      this.statusItem,
      this.stateEmitter,
      vscodeapi.onDidChangeConfiguration((event) => this.onConfigurationChanged(event)),
      // A setting ignored while untrusted (tpulint.server.path) may apply once trust is granted.
      vscodeapi.onDidGrantWorkspaceTrust(() => this.restart()),
    );
    this.updateStatus('starting');
  }

  /** The running client, or undefined while the server is down. */
  get languageClient(): LanguageClient | undefined {
    return this.client?.state === State.Running ? this.client : undefined;
  }

  get runningServer(): RunningServer | undefined {
    return this.running;
  }

  start(): Promise<void> {
    return this.enqueue(() => this.startNow());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.stopNow());
  }

  /** Stops the server if it runs and starts it again; also forgives earlier crashes. */
  restart(): Promise<void> {
    return this.enqueue(async () => {
      this.crashPolicy.reset();
      await this.stopNow();
      await this.startNow();
    });
  }

  /** Whether the running server advertises `command` in its `executeCommandProvider`. */
  supportsCommand(command: string): boolean {
    return this.languageClient?.initializeResult?.capabilities.executeCommandProvider?.commands.includes(command) ?? false;
  }

  /** Sends a `workspace/executeCommand` request to the server, starting it first if needed. */
  async executeServerCommand<T>(command: string, args: unknown[]): Promise<T> {
    let client = this.languageClient;
    if (!client) {
      await this.start();
      client = this.languageClient;
    }
    if (!client) {
      throw new Error('the tpulint server is not running (see TPU Lint: Show Server Logs)');
    }
    return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args })) as T;
  }

  dispose(): void {
    void this.stop();
    for (const disposable of this.disposables) disposable.dispose();
  }

  private enqueue(operation: () => Promise<void>): Promise<void> {
    const next = this.queue.then(operation, operation);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async startNow(): Promise<void> {
    if (this.client) return;
    const settings = readSettings(vscodeapi.settingReader(vscodeapi.firstWorkspaceFolder()));
    const trusted = vscodeapi.isWorkspaceTrusted();
    const fromEnvironment = settings.importStrategy === 'fromEnvironment' && trusted;
    // The environment's interpreter: tpulint.python.interpreter, else the Python extension's.
    const interpreter = fromEnvironment
      ? settings.pythonInterpreter || (await pythonExtensionInterpreter(vscodeapi.firstWorkspaceFolder()?.uri, this.outputChannel))
      : undefined;
    if (fromEnvironment) {
      this.outputChannel.info(`importStrategy fromEnvironment: Python interpreter ${interpreter ?? '(none selected)'}`);
      void this.followInterpreter();
    }
    const resolution = resolveServerBinary({
      settingPath: settings.serverPath,
      importStrategy: settings.importStrategy,
      interpreter,
      workspaceTrusted: trusted,
      bundledPath: path.join(this.extensionRoot, ...bundledServerRelativePath(process.platform)),
      pathEnv: process.env.PATH,
      platform: process.platform,
      homeDir: os.homedir(),
      workspaceFolder: vscodeapi.firstWorkspaceFolder()?.uri.fsPath,
      probe: probeFile,
    });
    this.outputChannel.info(`Looking for the tpulint server (workspace ${trusted ? 'trusted' : 'not trusted'}):`);
    for (const line of describeAttempts(resolution.attempts)) this.outputChannel.info(`  ${line}`);
    const warning = ignoredSettingWarning(resolution);
    if (warning) {
      this.outputChannel.warn(warning);
      void vscodeapi.showWarningMessage(`${CLIENT_NAME}: ${warning}`);
    }
    if (!resolution.ok) {
      this.updateStatus('missing');
      const message =
        `${CLIENT_NAME}: no tpulint server binary found. Looked at: ${describeAttempts(resolution.attempts).join('; ')}. ` +
        (trusted
          ? fromEnvironment
            ? 'Install tpulint into the selected Python environment (pip install tpulint), set tpulint.server.path, or install the platform-specific extension package.'
            : 'Install tpulint on PATH, set tpulint.server.path, or install the platform-specific extension package.'
          : 'In an untrusted workspace only the bundled binary runs; install the platform-specific extension package or trust the workspace.');
      void this.offerHelp(message, OPEN_SETTINGS);
      return;
    }

    const serverOptions: ServerOptions = {
      command: resolution.path,
      args: SERVER_ARGS,
      transport: TransportKind.stdio,
      options: { env: { ...process.env, RUST_BACKTRACE: '1' } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'untitled', language: 'python' },
        // Jupyter cells: the server advertises notebookDocumentSync, so the client sends whole
        // notebooks; this filter routes the cells' requests (pulled diagnostics, code actions,
        // hover) to the server too.
        { notebook: '*', language: 'python' },
      ],
      diagnosticCollectionName: CLIENT_ID,
      outputChannel: this.outputChannel,
      traceOutputChannel: this.traceChannel,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: initializationOptions(settings),
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => this.onServerClosed(),
      },
      middleware: {
        workspace: {
          // The server may pull settings per file; answer with the mapped, flat settings.
          configuration: (params, token, next) => {
            const ours = params.items.map((item) => item.section === CLIENT_ID);
            if (!ours.some(Boolean)) return next(params, token);
            return params.items.map((item) => {
              const scope = item.scopeUri ? vscode.Uri.parse(item.scopeUri) : vscodeapi.firstWorkspaceFolder();
              return item.section === CLIENT_ID ? toServerSettings(readSettings(vscodeapi.settingReader(scope))) : null;
            });
          },
        },
      },
    };
    const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
    this.outputChannel.info(`Starting ${resolution.path} ${SERVER_ARGS.join(' ')} (${resolution.source})`);
    try {
      await client.start();
    } catch (error) {
      this.outputChannel.error(`The server failed to start: ${errorText(error)}`);
      this.updateStatus('failed');
      await client.dispose().catch(() => undefined);
      void this.offerHelp(`${CLIENT_NAME}: the server (${resolution.path}) failed to start: ${errorText(error)}`, RESTART);
      return;
    }
    this.client = client;
    this.running = { path: resolution.path, source: resolution.source, version: client.initializeResult?.serverInfo?.version };
    this.outputChannel.info(
      `Running tpulint ${this.running.version ?? '(version not reported)'} from ${resolution.path} (${describeSource(resolution.source)})`,
    );
    this.updateStatus('running');
    this.stateEmitter.fire();
  }

  /** With `fromEnvironment`, a new interpreter in the Python extension may mean another
   * tpulint: restart to pick it up. Subscribed once, on the first start that needs it. */
  private async followInterpreter(): Promise<void> {
    if (this.followingInterpreter) return;
    this.followingInterpreter = true;
    const subscription = await onDidChangePythonInterpreter(() => {
      const current = readSettings(vscodeapi.settingReader(vscodeapi.firstWorkspaceFolder()));
      if (current.importStrategy !== 'fromEnvironment' || current.pythonInterpreter) return;
      this.outputChannel.info('The Python interpreter changed; restarting the server (importStrategy fromEnvironment).');
      void this.restart();
    }, this.outputChannel);
    if (subscription) this.disposables.push(subscription);
  }

  private async stopNow(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.running = undefined;
    if (!client) return;
    try {
      if (client.state === State.Running) await client.stop(2000);
    } catch (error) {
      this.outputChannel.warn(`Stopping the server: ${errorText(error)}`);
    }
    await client.dispose().catch(() => undefined);
    this.updateStatus('stopped');
    this.stateEmitter.fire();
  }

  /** The connection closed without us stopping the client: the server exited or crashed. */
  private onServerClosed(): { action: CloseAction; handled: boolean } {
    if (this.crashPolicy.shouldRestart(Date.now())) {
      this.outputChannel.warn(`The server exited unexpectedly; restarting it (crash ${this.crashPolicy.recentCrashes}).`);
      return { action: CloseAction.Restart, handled: true };
    }
    this.outputChannel.error(`The server crashed ${this.crashPolicy.recentCrashes} times in 3 minutes; not restarting it.`);
    this.updateStatus('crashed');
    void this.offerHelp(
      `${CLIENT_NAME}: the server crashed ${this.crashPolicy.recentCrashes} times in the last 3 minutes and was not restarted.`,
      RESTART,
    );
    // Forget the dead client so that commands report it and Restart starts a new one.
    const dead = this.client;
    this.client = undefined;
    this.running = undefined;
    setTimeout(() => void dead?.dispose().catch(() => undefined), 0);
    this.stateEmitter.fire();
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  private async onConfigurationChanged(event: vscode.ConfigurationChangeEvent): Promise<void> {
    let impact = configurationImpact((section) => event.affectsConfiguration(section));
    // The interpreter chooses the binary only under importStrategy fromEnvironment.
    if (
      event.affectsConfiguration('tpulint.python.interpreter') &&
      readSettings(vscodeapi.settingReader(vscodeapi.firstWorkspaceFolder())).importStrategy === 'fromEnvironment'
    ) {
      impact = 'restart';
    }
    if (impact === 'restart') {
      this.outputChannel.info('tpulint.server.path or tpulint.importStrategy changed; restarting the server.');
      await this.restart();
    } else if (impact === 'notify' && this.languageClient) {
      const settings = toServerSettings(readSettings(vscodeapi.settingReader(vscodeapi.firstWorkspaceFolder())));
      await this.languageClient.sendNotification(DidChangeConfigurationNotification.type, { settings });
    }
  }

  private async offerHelp(message: string, secondAction: typeof RESTART | typeof OPEN_SETTINGS): Promise<void> {
    const choice = await vscodeapi.showErrorMessage(message, SHOW_LOGS, secondAction);
    if (choice === SHOW_LOGS) this.outputChannel.show();
    if (choice === RESTART) await this.restart();
    if (choice === OPEN_SETTINGS) await vscodeapi.executeCommand('workbench.action.openSettings', 'tpulint.server');
  }

  private updateStatus(state: 'starting' | 'running' | 'stopped' | 'missing' | 'failed' | 'crashed'): void {
    const item = this.statusItem;
    item.severity = vscode.LanguageStatusSeverity.Information;
    item.busy = state === 'starting';
    switch (state) {
      case 'running': {
        const version = this.running?.version ? ` ${this.running.version}` : '';
        item.text = `tpulint${version}`;
        item.detail = this.running?.source === 'bundled' ? 'bundled server' : this.running?.path;
        break;
      }
      case 'starting':
        item.text = 'tpulint starting';
        item.detail = undefined;
        break;
      case 'stopped':
        item.text = 'tpulint stopped';
        item.detail = undefined;
        break;
      default:
        item.severity = vscode.LanguageStatusSeverity.Error;
        item.text = state === 'missing' ? 'tpulint server not found' : `tpulint server ${state}`;
        item.detail = 'see the logs';
    }
  }
}

/** Is `candidate` a file we may execute? Uses `access(X_OK)`, as the OS will when spawning. */
const probeFile: FileProbe = (candidate) => {
  try {
    if (!fs.statSync(candidate).isFile()) return 'not executable';
  } catch {
    return 'missing';
  }
  try {
    fs.accessSync(candidate, fs.constants.X_OK);
    return 'executable';
  } catch {
    return 'not executable';
  }
};

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
