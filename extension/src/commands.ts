/**
 * The editor-side commands that talk to the server: Fix All Issues and Show Rule
 * Documentation. Both only forward to the server; the extension holds no rule knowledge.
 */
import * as vscode from 'vscode';
import { HoverRequest } from 'vscode-languageclient/node';
import { DIAGNOSTIC_SOURCE } from './constants';
import { APPLY_AUTOFIX, type ApplyAutofixArguments } from './lspExt';
import type { ReportView } from './reportView';
import { errorText, type ServerManager } from './server';
import * as vscodeapi from './vscodeapi';

/** Applies every fix the settings allow (safe ones, plus unsafe ones with `tpulint.fix.unsafe`)
 * to the active Python file. The server sends the edit back through `workspace/applyEdit`. */
export async function fixAll(server: ServerManager): Promise<void> {
  const editor = vscodeapi.activeTextEditor();
  if (!editor || editor.document.languageId !== 'python') {
    void vscodeapi.showInformationMessage('TPU Lint: open a Python file to fix.');
    return;
  }
  const document = editor.document;
  const versionBefore = document.version;
  const argument: ApplyAutofixArguments = { uri: document.uri.toString(), version: document.version };
  try {
    await server.executeServerCommand(APPLY_AUTOFIX, [argument]);
  } catch (error) {
    void vscodeapi.showErrorMessage(`TPU Lint: Fix All failed: ${errorText(error)}`);
    return;
  }
  if (document.version === versionBefore) {
    void vscode.window.setStatusBarMessage('TPU Lint: nothing to fix automatically', 4000);
  }
}

/** Our diagnostics at the cursor, else on the cursor's line. */
export function diagnosticsAtCursor(editor: vscode.TextEditor): vscode.Diagnostic[] {
  const ours = vscodeapi.getDiagnostics(editor.document.uri).filter((diagnostic) => diagnostic.source === DIAGNOSTIC_SOURCE);
  const position = editor.selection.active;
  const underCursor = ours.filter((diagnostic) => diagnostic.range.contains(position));
  if (underCursor.length > 0) return underCursor;
  return ours.filter((diagnostic) => diagnostic.range.start.line <= position.line && position.line <= diagnostic.range.end.line);
}

export function ruleCode(diagnostic: vscode.Diagnostic): string | undefined {
  const code = diagnostic.code;
  if (code === undefined) return undefined;
  return typeof code === 'object' ? String(code.value) : String(code);
}

/** Shows the documentation of the rule behind the diagnostic under the cursor. The server
 * answers a hover on a diagnostic with the docs of its rules; the rendered Markdown opens
 * beside the editor. Falls back to the diagnostic's documentation link. */
export async function showRuleDocumentation(server: ServerManager, reportView: ReportView): Promise<void> {
  const editor = vscodeapi.activeTextEditor();
  if (!editor) {
    void vscodeapi.showInformationMessage('TPU Lint: put the cursor on a tpulint diagnostic first.');
    return;
  }
  const candidates = diagnosticsAtCursor(editor);
  let diagnostic = candidates[0];
  if (candidates.length > 1) {
    const picked = await vscode.window.showQuickPick(
      candidates.map((candidate) => ({ label: ruleCode(candidate) ?? '?', description: candidate.message, candidate })),
      { title: 'Show documentation of which rule?' },
    );
    diagnostic = picked?.candidate as vscode.Diagnostic;
  }
  if (!diagnostic) {
    if (candidates.length === 0) {
      void vscodeapi.showInformationMessage('TPU Lint: no tpulint diagnostic under the cursor.');
    }
    return;
  }
  const code = ruleCode(diagnostic) ?? 'rule';
  const markdown = await ruleDocumentationFromServer(server, editor.document, diagnostic, code);
  if (markdown) {
    await reportView.show(`${code} documentation`, markdown);
    return;
  }
  const href = diagnostic.code && typeof diagnostic.code === 'object' ? diagnostic.code.target : undefined;
  if (href) {
    await vscode.env.openExternal(href);
  } else {
    void vscodeapi.showInformationMessage(`TPU Lint: the server has no documentation for ${code}.`);
  }
}

async function ruleDocumentationFromServer(
  server: ServerManager,
  document: vscode.TextDocument,
  diagnostic: vscode.Diagnostic,
  code: string,
): Promise<string | undefined> {
  const client = server.languageClient;
  if (!client) return undefined;
  try {
    const hover = await client.sendRequest(HoverRequest.type, {
      textDocument: { uri: client.code2ProtocolConverter.asUri(document.uri) },
      position: client.code2ProtocolConverter.asPosition(diagnostic.range.start),
    });
    const contents = hover?.contents;
    const markdown =
      typeof contents === 'string'
        ? contents
        : contents && 'value' in contents
          ? contents.value
          : Array.isArray(contents)
            ? contents.map((part) => (typeof part === 'string' ? part : part.value)).join('\n\n')
            : undefined;
    // With several rules on one spot the hover holds each; keep the one asked for, first.
    if (!markdown) return undefined;
    const sections = markdown.split(/\n\n---\n\n/);
    const wanted = sections.find((section) => section.includes(code));
    return wanted ?? markdown;
  } catch (error) {
    server.outputChannel.warn(`Hover for ${code} failed: ${errorText(error)}`);
    return undefined;
  }
}
