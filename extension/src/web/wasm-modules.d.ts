/**
 * The WebAssembly build as the web bundles import it. esbuild maps these names onto
 * `server/wasm/pkg/web/` (built by server/wasm/build.sh), so type-checking does not need the
 * build; the shapes are those of server/wasm/src/lib.rs.
 */
declare module 'tpulint-wasm-web' {
  import type { CheckOptions, FixOutcome, JsonDiagnostic, RuleInfo } from './analysis';
  export function initSync(module: { module: Uint8Array }): unknown;
  export function check(source: string, options: CheckOptions): JsonDiagnostic[];
  export function applyFixes(source: string, options: CheckOptions, unsafe: boolean): FixOutcome;
  export function rules(): RuleInfo[];
  export function version(): string;
}

/** `rule-docs.json`, written by build.sh beside the module (the `RuleDocs` of ./analysis). */
declare module 'tpulint-rule-docs' {
  const docs: Record<string, { summary: string; explanation: string }>;
  export default docs;
}

declare module 'tpulint-wasm-bytes' {
  const bytes: Uint8Array;
  export default bytes;
}
