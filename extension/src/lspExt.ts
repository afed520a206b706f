/**
 * The parts of the protocol that are tpulint's own: the server's `workspace/executeCommand`
 * commands, their arguments and results. Mirrors the server's command handlers; the parsers
 * here check what comes back, so a server of another version yields a clear error rather than
 * an `undefined` deep inside a view.
 */

/** Applies every fix for one document through `workspace/applyEdit`. */
export const APPLY_AUTOFIX = 'tpulint.applyAutofix';
/**
 * Runs the environment check (`tpulint_doctor`) in an interpreter and returns the report.
 *
 * Arguments: `[{interpreter: "/abs/path/to/python"}]`. Result, built from the doctor's
 * `Report`:
 * ```json
 * { "verdict": "ready" | "degraded" | "not_ready",   // Report::verdict, as in its JSON schema
 *   "summary": "not ready: 2 errors (...)",            // Report::summary_line
 *   "markdown": "# TPU environment ...",               // render(report, OutputFormat::Markdown)
 *   "fixes": [{ "title": "...", "command": "..." }] }  // Report::suggested_commands
 * ```
 * A bare Markdown string is accepted too (verdict unknown, no fixes), so that a server which
 * only renders the report still shows it.
 */
export const CHECK_ENVIRONMENT = 'tpulint.checkEnvironment';

export interface ApplyAutofixArguments {
  uri: string;
  version?: number;
}

export interface CheckEnvironmentArguments {
  /** Absolute path of the Python interpreter to inspect. */
  interpreter: string;
}

export type Verdict = 'ready' | 'degraded' | 'not_ready' | 'unknown';

/** A fix the report suggests: a shell command the user may run after confirming. */
export interface SuggestedFix {
  title: string;
  command: string;
  /** The finding it fixes (`torch-tpu-torch-mismatch`) and that finding's documentation page. */
  finding?: string;
  url?: string;
}

export interface EnvironmentReport {
  verdict: Verdict;
  /** One line for the status bar tooltip and notifications. */
  summary: string;
  /** The full report, rendered in a Markdown preview. */
  markdown: string;
  fixes: SuggestedFix[];
}

/** Reads the server's answer to `tpulint.checkEnvironment`. */
export function parseEnvironmentReport(value: unknown): EnvironmentReport {
  if (typeof value === 'string' && value.trim()) {
    return { verdict: 'unknown', summary: '', markdown: value, fixes: [] };
  }
  if (!isObject(value) || typeof value.markdown !== 'string') {
    throw new Error(`unexpected environment report from the server: ${JSON.stringify(value)?.slice(0, 200)}`);
  }
  const fixes: SuggestedFix[] = [];
  if (Array.isArray(value.fixes)) {
    for (const fix of value.fixes) {
      if (isObject(fix) && typeof fix.command === 'string' && fix.command.trim()) {
        const parsed: SuggestedFix = { title: typeof fix.title === 'string' ? fix.title : fix.command, command: fix.command };
        if (typeof fix.finding === 'string') parsed.finding = fix.finding;
        if (typeof fix.url === 'string' && fix.url.startsWith('https://')) parsed.url = fix.url;
        fixes.push(parsed);
      }
    }
  }
  return {
    verdict: VERDICTS.find((verdict) => verdict === value.verdict) ?? 'unknown',
    summary: typeof value.summary === 'string' ? value.summary : '',
    markdown: value.markdown,
    fixes,
  };
}

const VERDICTS: readonly Verdict[] = ['ready', 'degraded', 'not_ready'];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
