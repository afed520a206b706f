/**
 * What the web language server needs from tpulint's JSON output, as plain functions over text:
 * LSP diagnostics with UTF-16 positions, quick fixes, and whole-document fix edits. The analysis
 * itself is the WebAssembly build's (`check`, `applyFixes`, `rules`); nothing here knows a rule.
 * No `vscode`, no connection: the Node tests call these directly.
 */
import {
  CodeAction,
  CodeActionKind,
  type Diagnostic,
  DiagnosticSeverity,
  type Position,
  type Range,
  type TextEdit,
} from 'vscode-languageserver/browser';

/** The functions the WebAssembly build exports (see server/wasm/src/lib.rs). */
export interface TpulintWasm {
  check(source: string, options: CheckOptions): JsonDiagnostic[];
  applyFixes(source: string, options: CheckOptions, unsafe: boolean): FixOutcome;
  rules(): RuleInfo[];
  version(): string;
}

/** Options of `check` and `applyFixes`. */
export interface CheckOptions {
  select?: string[];
  ignore?: string[];
  backend?: string;
  filename?: string;
}

/** A 1-based row and column; columns count code points (ruff's JSON). */
export interface JsonLocation {
  row: number;
  column: number;
}

export interface JsonEdit {
  content: string;
  location: JsonLocation;
  end_location: JsonLocation;
}

export interface JsonFix {
  applicability: 'safe' | 'unsafe' | 'display-only';
  message: string;
  edits: JsonEdit[];
}

/** One diagnostic of `tpulint check --output-format json`. */
export interface JsonDiagnostic {
  code: string;
  message: string;
  severity: 'error' | 'warning' | 'info';
  location: JsonLocation;
  end_location: JsonLocation;
  fix: JsonFix | null;
  url: string | null;
  related?: { message: string; location: JsonLocation; end_location: JsonLocation }[];
}

export interface FixOutcome {
  output: string;
  fixed: Record<string, number>;
  remaining: JsonDiagnostic[];
  converged: boolean;
}

/**
 * A rule as `rules()` lists it. The WebAssembly module carries no documentation (it must stay
 * within its size budget): summaries and explanations come from `rule-docs.json`, which
 * server/wasm/build.sh writes beside the module and the web bundle embeds.
 */
export interface RuleInfo {
  code: string;
  name: string;
  url: string;
}

/** `rule-docs.json`: each rule's and runtime code's summary and Markdown documentation, by code. */
export type RuleDocs = Record<string, { summary: string; explanation: string }>;

/** The `source` of every diagnostic, as the native server sets it. */
export const DIAGNOSTIC_SOURCE = 'tpulint';
/** Code action kind of "fix all", as the native server offers it (for `codeActionsOnSave`). */
export const FIX_ALL_KIND = `${CodeActionKind.SourceFixAll}.tpulint`;

/** What a published diagnostic carries back to the code-action handler. */
export interface DiagnosticData {
  fix: JsonFix | null;
}

/** Converts 1-based rows and code-point columns into LSP positions (0-based, UTF-16). */
export class PositionMapper {
  private readonly starts: number[];

  constructor(private readonly text: string) {
    this.starts = [0];
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 10) this.starts.push(i + 1);
      else if (c === 13) {
        if (text.charCodeAt(i + 1) === 10) i++;
        this.starts.push(i + 1);
      }
    }
  }

  /** UTF-16 offset of a JSON location, clamped to its line and to the text. */
  offset(location: JsonLocation): number {
    const line = Math.min(Math.max(location.row, 1), this.starts.length) - 1;
    let offset = this.starts[line];
    for (let column = 1; column < location.column && offset < this.text.length; column++) {
      const c = this.text.charCodeAt(offset);
      if (c === 10 || c === 13) break;
      offset += c >= 0xd800 && c <= 0xdbff ? 2 : 1;
    }
    return offset;
  }

  position(location: JsonLocation): Position {
    const line = Math.min(Math.max(location.row, 1), this.starts.length) - 1;
    return { line, character: this.offset(location) - this.starts[line] };
  }

  range(start: JsonLocation, end: JsonLocation): Range {
    return { start: this.position(start), end: this.position(end) };
  }

  /** The range of the whole text, for replacing it. */
  wholeRange(): Range {
    const last = this.starts.length - 1;
    return { start: { line: 0, character: 0 }, end: { line: last, character: this.text.length - this.starts[last] } };
  }
}

const SEVERITIES: Record<JsonDiagnostic['severity'], DiagnosticSeverity> = {
  error: DiagnosticSeverity.Error,
  warning: DiagnosticSeverity.Warning,
  info: DiagnosticSeverity.Information,
};

/** LSP diagnostics for `text`, from `check`'s output. */
export function toLspDiagnostics(uri: string, text: string, diagnostics: JsonDiagnostic[]): Diagnostic[] {
  const mapper = new PositionMapper(text);
  return diagnostics.map((diagnostic) => {
    const lsp: Diagnostic = {
      range: mapper.range(diagnostic.location, diagnostic.end_location),
      severity: SEVERITIES[diagnostic.severity] ?? DiagnosticSeverity.Warning,
      code: diagnostic.code,
      source: DIAGNOSTIC_SOURCE,
      message: diagnostic.message,
      data: { fix: diagnostic.fix } satisfies DiagnosticData,
    };
    if (diagnostic.url) lsp.codeDescription = { href: diagnostic.url };
    if (diagnostic.related?.length) {
      lsp.relatedInformation = diagnostic.related.map((related) => ({
        location: { uri, range: mapper.range(related.location, related.end_location) },
        message: related.message,
      }));
    }
    return lsp;
  });
}

/** The text edits of one fix. */
export function fixEdits(text: string, fix: JsonFix): TextEdit[] {
  const mapper = new PositionMapper(text);
  return fix.edits.map((edit) => ({ range: mapper.range(edit.location, edit.end_location), newText: edit.content }));
}

/** Quick fixes for the diagnostics VS Code sends with a code-action request. Display-only fixes
 * need a human, so they are not offered as edits (the message says what to do). */
export function quickFixes(uri: string, text: string, diagnostics: Diagnostic[]): CodeAction[] {
  const actions: CodeAction[] = [];
  for (const diagnostic of diagnostics) {
    if (diagnostic.source !== DIAGNOSTIC_SOURCE) continue;
    const fix = (diagnostic.data as DiagnosticData | undefined)?.fix;
    if (!fix || fix.applicability === 'display-only' || fix.edits.length === 0) continue;
    const title = fix.applicability === 'unsafe' ? `${fix.message} (unsafe)` : fix.message;
    const action = CodeAction.create(`${title} (${diagnostic.code})`, { changes: { [uri]: fixEdits(text, fix) } }, CodeActionKind.QuickFix);
    action.diagnostics = [diagnostic];
    action.isPreferred = fix.applicability === 'safe';
    actions.push(action);
  }
  return actions;
}

/** One edit replacing the whole document with `applyFixes`' output, or none when nothing changed. */
export function fixAllEdit(text: string, outcome: FixOutcome): TextEdit | undefined {
  if (outcome.output === text) return undefined;
  return { range: new PositionMapper(text).wholeRange(), newText: outcome.output };
}

/** Whether an LSP position lies within a range (ends inclusive, as hovers expect). */
export function contains(range: Range, position: Position): boolean {
  const after = (a: Position, b: Position) => a.line > b.line || (a.line === b.line && a.character >= b.character);
  return after(position, range.start) && after(range.end, position);
}

/** The settings object the extension sends (see extension/src/settings.ts). */
export interface ServerSettings {
  select?: string[];
  ignore?: string[];
  backend?: string;
  unsafeFixes?: boolean;
}

/** The `check` options for a document under these settings. */
export function checkOptions(settings: ServerSettings, uri: string): CheckOptions {
  const options: CheckOptions = { filename: fileName(uri) };
  if (settings.select && settings.select.length > 0) options.select = settings.select;
  if (settings.ignore && settings.ignore.length > 0) options.ignore = settings.ignore;
  if (settings.backend) options.backend = settings.backend;
  return options;
}

/** Reads the settings object out of whatever the client sent, dropping ill-typed fields (a typo
 * in settings.json must not stop linting). */
export function readServerSettings(value: unknown): ServerSettings {
  const object = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  const inner = typeof object.settings === 'object' && object.settings !== null ? (object.settings as Record<string, unknown>) : object;
  const strings = (list: unknown) => (Array.isArray(list) ? list.filter((item): item is string => typeof item === 'string') : undefined);
  return {
    select: strings(inner.select),
    ignore: strings(inner.ignore),
    backend: typeof inner.backend === 'string' ? inner.backend : undefined,
    unsafeFixes: inner.unsafeFixes === true,
  };
}

function fileName(uri: string): string {
  const path = uri.replace(/[?#].*$/, '');
  const name = path.slice(path.lastIndexOf('/') + 1);
  try {
    return decodeURIComponent(name) || 'untitled.py';
  } catch {
    return name || 'untitled.py';
  }
}
