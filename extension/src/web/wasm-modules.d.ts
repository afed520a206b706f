/**
 * The WebAssembly build as the web bundles import it. esbuild maps these names onto
 * `server/wasm/pkg/web/` (built by server/wasm/build.sh), so type-checking does not need the
 * build; the shapes are those of server/wasm/src/lib.rs.
 */
declare module 'tpulint-wasm-web' {
  import type { WasmLanguageServer } from './server';
  export function initSync(module: { module: Uint8Array }): unknown;
  /** The language server: `new LanguageServer(JSON.stringify(ruleDocs))`. */
  export class LanguageServer implements WasmLanguageServer {
    constructor(ruleDocs: string);
    handle(message: string): string;
    idle(): string;
    hasPendingWork(): boolean;
    isShuttingDown(): boolean;
  }
  export function version(): string;
}

/** `rule-docs.json`, written by build.sh beside the module: summary and documentation by code. */
declare module 'tpulint-rule-docs' {
  const docs: Record<string, { summary: string; explanation: string }>;
  export default docs;
}

declare module 'tpulint-wasm-bytes' {
  const bytes: Uint8Array;
  export default bytes;
}
