/**
 * "TPU Lint: Check TPU Environment": asks the server to inspect a Python interpreter, shows the
 * Markdown report rendered, puts the verdict in the status bar, and offers the report's
 * suggested fixes to run in a terminal, each only after the user picks it.
 *
 * The check runs the chosen interpreter, which may be the workspace's own `.venv`: it is refused
 * in an untrusted workspace.
 */
import * as vscode from 'vscode';
import { Commands } from './constants';
import type { InterpreterSelector } from './interpreter';
import { CHECK_ENVIRONMENT, parseEnvironmentReport, type EnvironmentReport, type SuggestedFix } from './lspExt';
import type { ReportView } from './reportView';
import { errorText, type ServerManager } from './server';
import { readSettings } from './settings';
import { shellQuote } from './traceCommand';
import * as vscodeapi from './vscodeapi';

export const REPORT_TITLE = 'TPU Environment Report';
const REVIEW_FIXES = 'Review Fixes…';
const SHOW_REPORT = 'Show Report';
const RUN_DOCTOR = 'Run tpulint doctor in Terminal';
const EXPLAIN = 'Explain';

export class EnvironmentCheck implements vscode.Disposable {
  private readonly statusBar = vscode.window.createStatusBarItem('tpulint.environment', vscode.StatusBarAlignment.Left, 50);
  private terminal: vscode.Terminal | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly server: ServerManager,
    private readonly reportView: ReportView,
    private readonly interpreters: InterpreterSelector,
  ) {
    this.statusBar.name = 'TPU Environment';
    this.statusBar.command = Commands.showEnvironmentReport;
    this.disposables.push(
      this.statusBar,
      vscode.window.onDidCloseTerminal((closed) => {
        if (closed === this.terminal) this.terminal = undefined;
      }),
    );
  }

  /** Runs the check; returns the report (also for tests), or undefined if it did not run. */
  async run(): Promise<EnvironmentReport | undefined> {
    if (!vscodeapi.isWorkspaceTrusted()) {
      void vscodeapi.showWarningMessage(
        'TPU Lint: the environment check runs the workspace\'s Python interpreter, so it is disabled until you trust this workspace.',
      );
      return undefined;
    }
    const resource = vscodeapi.activeTextEditor()?.document.uri ?? vscodeapi.firstWorkspaceFolder()?.uri;
    const settings = readSettings(vscodeapi.settingReader(resource));
    const interpreter = await this.interpreters.resolve(resource, settings.pythonInterpreter);
    if (!interpreter) return undefined;
    this.server.outputChannel.info(`Checking the TPU environment of ${interpreter.path} (${interpreter.source})`);

    if (!this.server.languageClient) await this.server.start();
    if (this.server.languageClient && !this.server.supportsCommand(CHECK_ENVIRONMENT)) {
      // An older server: offer the same check from the command line instead.
      const serverPath = this.server.runningServer?.path ?? 'tpulint';
      this.server.outputChannel.warn(`${serverPath} does not offer ${CHECK_ENVIRONMENT}.`);
      const choice = await vscodeapi.showErrorMessage(
        'TPU Lint: this tpulint server does not offer the environment check. Update tpulint, or run `tpulint doctor` in a terminal.',
        RUN_DOCTOR,
      );
      if (choice === RUN_DOCTOR) {
        this.runInTerminal([{ title: 'tpulint doctor', command: `${shellQuote(serverPath)} doctor --python ${shellQuote(interpreter.path)}` }]);
      }
      return undefined;
    }

    let report: EnvironmentReport;
    try {
      report = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `TPU Lint: checking ${interpreter.path}…` },
        async () =>
          parseEnvironmentReport(await this.server.executeServerCommand(CHECK_ENVIRONMENT, [{ interpreter: interpreter.path }])),
      );
    } catch (error) {
      this.server.outputChannel.error(`Environment check failed: ${errorText(error)}`);
      void vscodeapi.showErrorMessage(`TPU Lint: the environment check failed: ${errorText(error)}`);
      return undefined;
    }
    await this.reportView.show(REPORT_TITLE, report.markdown);
    this.showVerdict(report, interpreter.path);
    if (report.fixes.length > 0) {
      void this.offerFixes(report);
    }
    return report;
  }

  async showReport(): Promise<void> {
    if (this.reportView.has(REPORT_TITLE)) {
      await this.reportView.reveal(this.reportView.uriFor(REPORT_TITLE));
    } else {
      await this.run();
    }
  }

  private showVerdict(report: EnvironmentReport, interpreter: string): void {
    const [icon, text] = {
      ready: ['$(pass)', 'TPU env: ready'],
      degraded: ['$(warning)', 'TPU env: degraded'],
      not_ready: ['$(error)', 'TPU env: not ready'],
      unknown: ['$(info)', 'TPU env: checked'],
    }[report.verdict];
    this.statusBar.text = `${icon} ${text}`;
    this.statusBar.tooltip = new vscode.MarkdownString(
      `**${text}**\n\n${report.summary || ''}\n\nInterpreter: \`${interpreter}\`\n\nClick to show the report.`,
    );
    this.statusBar.backgroundColor =
      report.verdict === 'not_ready'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : report.verdict === 'degraded'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
    this.statusBar.show();
  }

  /** Lists the suggested fixes; runs only the ones the user ticks, in a terminal they can see. */
  private async offerFixes(report: EnvironmentReport): Promise<void> {
    const count = report.fixes.length;
    // The first finding's documentation page (the report itself links every finding).
    const firstPage = report.fixes.find((fix) => fix.url)?.url;
    const choice = await vscodeapi.showWarningMessage(
      `TPU Lint: ${report.summary || 'the environment check found problems'}. ${count} suggested fix${count === 1 ? '' : 'es'}.`,
      REVIEW_FIXES,
      SHOW_REPORT,
      ...(firstPage ? [EXPLAIN] : []),
    );
    if (choice === EXPLAIN && firstPage) await vscode.env.openExternal(vscode.Uri.parse(firstPage));
    if (choice === SHOW_REPORT) await this.showReport();
    if (choice !== REVIEW_FIXES) return;
    const picked = await vscode.window.showQuickPick(
      report.fixes.map((fix) => ({ label: fix.title, description: fix.finding, detail: `$(terminal) ${fix.command}`, fix })),
      {
        title: 'Run suggested fixes in a terminal',
        placeHolder: 'Tick the fixes to run, then press Enter. Nothing runs unless you tick it.',
        canPickMany: true,
        ignoreFocusOut: true,
      },
    );
    if (!picked || picked.length === 0) return;
    this.runInTerminal(picked.map((item) => item.fix));
  }

  private runInTerminal(fixes: SuggestedFix[]): void {
    this.terminal ??= vscode.window.createTerminal({ name: 'TPU Lint: environment fixes' });
    this.terminal.show();
    for (const fix of fixes) {
      this.server.outputChannel.info(`Running suggested fix in a terminal: ${fix.command}`);
      this.terminal.sendText(fix.command, true);
    }
  }

  dispose(): void {
    for (const disposable of this.disposables) disposable.dispose();
  }
}
