/**
 * The language server of VS Code for the web: the same protocol surface as `tpulint server`
 * (push diagnostics, quick fixes, `source.fixAll.tpulint`, the `tpulint.applyAutofix` command,
 * rule docs on hover), answered by the WebAssembly build inside a web worker. The connection is
 * passed in, so the Node tests drive this over a MessageChannel exactly as the editor does.
 */
import {
  type CodeAction,
  CodeActionKind,
  type CodeActionParams,
  type Connection,
  type Diagnostic,
  type ExecuteCommandParams,
  type Hover,
  type HoverParams,
  type InitializeResult,
  TextDocumentSyncKind,
  TextDocuments,
} from 'vscode-languageserver/browser';
import { TextDocument } from 'vscode-languageserver-textdocument';
import {
  checkOptions,
  contains,
  DIAGNOSTIC_SOURCE,
  FIX_ALL_KIND,
  fixAllEdit,
  quickFixes,
  readServerSettings,
  type RuleDocs,
  type RuleInfo,
  type ServerSettings,
  toLspDiagnostics,
  type TpulintWasm,
} from './analysis';

/** The server command that applies every allowed fix to one document (as the native server). */
export const APPLY_AUTOFIX = 'tpulint.applyAutofix';

/** How long edits are coalesced before a document is checked again. */
const CHECK_DELAY_MS = 50;

/** Serves LSP with `wasm`; hovers show the documentation in `docs` (`rule-docs.json`). */
export function startServer(connection: Connection, wasm: TpulintWasm, docs: RuleDocs): void {
  const documents = new TextDocuments(TextDocument);
  let settings: ServerSettings = {};
  let rulesByCode: Map<string, RuleInfo> | undefined;
  /** Published diagnostics per document, for hovers. */
  const published = new Map<string, Diagnostic[]>();
  const timers = new Map<string, ReturnType<typeof setTimeout>>();

  connection.onInitialize((params): InitializeResult => {
    settings = readServerSettings(params.initializationOptions);
    return {
      capabilities: {
        textDocumentSync: { openClose: true, change: TextDocumentSyncKind.Incremental },
        codeActionProvider: { codeActionKinds: [CodeActionKind.QuickFix, FIX_ALL_KIND], resolveProvider: false },
        executeCommandProvider: { commands: [APPLY_AUTOFIX] },
        hoverProvider: true,
      },
      serverInfo: { name: 'tpulint (WebAssembly)', version: wasm.version() },
    };
  });

  connection.onDidChangeConfiguration((params) => {
    settings = readServerSettings(params.settings);
    for (const document of documents.all()) schedule(document.uri, 0);
  });

  /** Checks a document and publishes for the version it checked; a newer edit reschedules. */
  function publish(uri: string): void {
    timers.delete(uri);
    const document = documents.get(uri);
    if (!document) return;
    const text = document.getText();
    let diagnostics: Diagnostic[];
    try {
      diagnostics = toLspDiagnostics(uri, text, wasm.check(text, checkOptions(settings, uri)));
    } catch (error) {
      // Bad settings (an unknown rule code) are the user's to fix; say so once per check.
      connection.console.error(`tpulint: ${errorText(error)}`);
      diagnostics = [];
    }
    published.set(uri, diagnostics);
    void connection.sendDiagnostics({ uri, version: document.version, diagnostics });
  }

  function schedule(uri: string, delay = CHECK_DELAY_MS): void {
    clearTimeout(timers.get(uri));
    timers.set(
      uri,
      setTimeout(() => publish(uri), delay),
    );
  }

  documents.onDidOpen((event) => schedule(event.document.uri, 0));
  documents.onDidChangeContent((event) => schedule(event.document.uri));
  documents.onDidClose((event) => {
    clearTimeout(timers.get(event.document.uri));
    timers.delete(event.document.uri);
    published.delete(event.document.uri);
    void connection.sendDiagnostics({ uri: event.document.uri, diagnostics: [] });
  });

  connection.onCodeAction((params: CodeActionParams): CodeAction[] => {
    const document = documents.get(params.textDocument.uri);
    if (!document) return [];
    const text = document.getText();
    const only = params.context.only;
    const wants = (kind: string) => !only || only.some((requested) => kind === requested || kind.startsWith(`${requested}.`));
    const actions: CodeAction[] = [];
    if (wants(CodeActionKind.QuickFix)) {
      actions.push(...quickFixes(document.uri, text, params.context.diagnostics));
    }
    if (wants(FIX_ALL_KIND)) {
      const edit = fixAll(document);
      if (edit) {
        actions.push({ title: 'tpulint: Fix all auto-fixable problems', kind: FIX_ALL_KIND, edit: { changes: { [document.uri]: [edit] } } });
      }
    }
    return actions;
  });

  function fixAll(document: TextDocument) {
    const text = document.getText();
    const outcome = wasm.applyFixes(text, checkOptions(settings, document.uri), settings.unsafeFixes === true);
    return fixAllEdit(text, outcome);
  }

  connection.onExecuteCommand(async (params: ExecuteCommandParams) => {
    if (params.command !== APPLY_AUTOFIX) throw new Error(`unknown command ${params.command}`);
    const argument = (params.arguments?.[0] ?? {}) as { uri?: string; version?: number };
    const document = argument.uri ? documents.get(argument.uri) : undefined;
    if (!document) throw new Error(`tpulint.applyAutofix: ${argument.uri ?? 'no uri'} is not open`);
    if (argument.version !== undefined && argument.version !== document.version) {
      throw new Error('tpulint.applyAutofix: the document changed; try again');
    }
    const edit = fixAll(document);
    if (!edit) return null;
    await connection.workspace.applyEdit({
      label: 'tpulint: Fix all',
      edit: { documentChanges: [{ textDocument: { uri: document.uri, version: document.version }, edits: [edit] }] },
    });
    return null;
  });

  connection.onHover((params: HoverParams): Hover | null => {
    const diagnostics = published.get(params.textDocument.uri) ?? [];
    const here = diagnostics.filter((diagnostic) => diagnostic.source === DIAGNOSTIC_SOURCE && contains(diagnostic.range, params.position));
    if (here.length === 0) return null;
    rulesByCode ??= new Map(wasm.rules().map((rule) => [rule.code, rule]));
    const sections = [...new Set(here.map((diagnostic) => String(diagnostic.code)))].flatMap((code) => {
      const rule = rulesByCode?.get(code);
      const explanation = docs[code]?.explanation;
      return rule && explanation ? [`**${rule.code}** \`${rule.name}\`\n\n${explanation.trim()}`] : [];
    });
    if (sections.length === 0) return null;
    return { contents: { kind: 'markdown', value: sections.join('\n\n---\n\n') } };
  });

  documents.listen(connection);
  connection.listen();
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
