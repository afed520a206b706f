/**
 * Read-only Markdown documents the extension shows (the environment report, rule
 * documentation), served from memory under the `tpulint-report:` scheme and opened in VS Code's
 * Markdown preview. Nothing is written to disk or to the workspace.
 */
import * as vscode from 'vscode';
import { REPORT_SCHEME } from './constants';

export class ReportView implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly contents = new Map<string, string>();
  private readonly changeEmitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changeEmitter.event;
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, this);

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? `# Nothing to show\n\nThis report is no longer available.\n`;
  }

  /** The URI a report called `title` is shown under; the title becomes the tab's name. */
  uriFor(title: string): vscode.Uri {
    return vscode.Uri.from({ scheme: REPORT_SCHEME, path: `/${title}.md` });
  }

  has(title: string): boolean {
    return this.contents.has(this.uriFor(title).toString());
  }

  /** Stores `markdown` as the report `title` and shows it rendered beside the editor. */
  async show(title: string, markdown: string): Promise<vscode.Uri> {
    const uri = this.uriFor(title);
    this.contents.set(uri.toString(), markdown);
    this.changeEmitter.fire(uri);
    await this.reveal(uri);
    return uri;
  }

  async reveal(uri: vscode.Uri): Promise<void> {
    // The preview needs the built-in Markdown extension; without it, show the source read-only.
    if (vscode.extensions.getExtension('vscode.markdown-language-features')) {
      await vscode.commands.executeCommand('markdown.showPreviewToSide', uri);
    } else {
      const document = await vscode.workspace.openTextDocument(uri);
      await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preview: true });
    }
  }

  dispose(): void {
    this.registration.dispose();
    this.changeEmitter.dispose();
  }
}
