//! WebAssembly bindings of the tpulint engine: `check`, `applyFixes` and `rules` for JavaScript
//! (the playground's module), or, with the `language-server` feature, `LanguageServer` (the
//! module of VS Code for the web, which needs nothing else). Both have `version`.
//!
//! The browser playground and the VS Code web extension run these in a web worker. Results are
//! the CLI's own machine formats (rendered by `tpulint_report`), so a diagnostic from the browser
//! is byte-for-byte the one `tpulint check --output-format json` prints. Everything JavaScript
//! sees is built by the plain Rust functions in [`api`], which the native tests exercise; the
//! `#[wasm_bindgen]` wrappers below only move strings across the boundary.

// Natively only its size classes are unit-tested; the allocator itself runs in the module, where
// every test of the module (fixtures.test.mjs, the web extension's) exercises it.
#[cfg(any(test, all(target_arch = "wasm32", not(target_feature = "atomics"))))]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod allocator;
pub mod api;
/// The JSON reader the options and the language server's messages share.
pub use tpulint_ide::server::json as json_value;
#[cfg(feature = "language-server")]
pub mod language_server;
pub mod options;

use wasm_bindgen::prelude::*;

/// A smaller allocator than the standard library's dlmalloc (see `allocator`), for the module's
/// size budget; one thread, hence only without the `atomics` target feature.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: allocator::SizeClassAllocator = allocator::SizeClassAllocator::new();

#[cfg(not(feature = "language-server"))]
use crate::options::CheckOptions;

// The two JavaScript functions the exports need, declared here rather than through the `js-sys`
// crate, whose bindings cost the module room (closure shims among them) for no other use.
#[cfg(not(feature = "language-server"))]
#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = JSON, js_name = stringify, catch)]
    fn json_stringify(value: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_namespace = JSON, js_name = parse, catch)]
    fn json_parse(text: &str) -> Result<JsValue, JsValue>;
}

/// Reads the options object by way of `JSON.stringify`, so that every field has one parser and
/// one error message, whether the caller is the playground, the web extension or a test.
#[cfg(not(feature = "language-server"))]
fn read_options(options: &JsValue) -> Result<CheckOptions, JsError> {
    if options.is_undefined() || options.is_null() {
        return Ok(CheckOptions::default());
    }
    let json = json_stringify(options)
        .ok()
        .and_then(|json| json.as_string())
        .ok_or_else(|| JsError::new("tpulint options must be a plain object"))?;
    CheckOptions::from_json(&json).map_err(|message| JsError::new(&message))
}

#[cfg(not(feature = "language-server"))]
fn parse_json(json: &str) -> Result<JsValue, JsError> {
    json_parse(json).map_err(|_| JsError::new("tpulint produced invalid JSON"))
}

/// Diagnostics of `source` as the CLI's `--output-format json` lists them (ruff's schema:
/// `code`, `message`, `location`, `end_location`, `fix`, `url`, `noqa_row`, …).
#[cfg(not(feature = "language-server"))]
#[wasm_bindgen]
pub fn check(source: &str, options: JsValue) -> Result<JsValue, JsError> {
    let options = read_options(&options)?;
    let json = api::check_json(source, &options).map_err(|message| JsError::new(&message))?;
    parse_json(&json)
}

/// Applies fixes to a fixed point, like `tpulint check --fix` (`--unsafe-fixes` when `unsafe`):
/// `{ output, fixed: { CODE: count }, remaining: [diagnostics of output], converged }`.
#[cfg(not(feature = "language-server"))]
#[wasm_bindgen(js_name = applyFixes)]
pub fn apply_fixes(source: &str, options: JsValue, r#unsafe: bool) -> Result<JsValue, JsError> {
    let options = read_options(&options)?;
    let json = api::apply_fixes_json(source, &options, r#unsafe)
        .map_err(|message| JsError::new(&message))?;
    parse_json(&json)
}

/// Every rule's metadata: code, name, family, severity, fix availability, default and URL. The
/// summaries and documentation (Markdown) are not in the module: `build.sh` writes them, by
/// code, to `rule-docs.json` beside it, which hosts merge (the web extension bundles it).
#[cfg(not(feature = "language-server"))]
#[wasm_bindgen]
pub fn rules() -> Result<JsValue, JsError> {
    parse_json(&api::rules_json())
}

/// The language server of VS Code for the web: `tpulint server`'s protocol logic
/// (`tpulint_ide::server`), fed JSON-RPC messages one at a time by the web worker, which only
/// moves them between VS Code and this object (see [`language_server`]).
#[cfg(feature = "language-server")]
#[wasm_bindgen]
pub struct LanguageServer(language_server::Server);

#[cfg(feature = "language-server")]
#[wasm_bindgen]
impl LanguageServer {
    /// `rule_docs`: the `rule-docs.json` that `build.sh` writes beside the module, shown in
    /// hovers (the module carries no documentation of its own).
    #[wasm_bindgen(constructor)]
    pub fn new(rule_docs: &str) -> LanguageServer {
        LanguageServer(language_server::Server::new(rule_docs))
    }

    /// Applies one message from the client; returns the messages to send back (a JSON array).
    pub fn handle(&mut self, message: &str) -> String {
        self.0.handle(message)
    }

    /// Checks and publishes what changed since the last call (a JSON array of messages); the
    /// worker calls it when no message is waiting.
    pub fn idle(&mut self) -> String {
        self.0.idle()
    }

    /// Whether `idle` has work to do.
    #[wasm_bindgen(js_name = hasPendingWork)]
    pub fn has_pending_work(&self) -> bool {
        self.0.has_pending_work()
    }

    /// Whether the client sent `exit`.
    #[wasm_bindgen(js_name = isShuttingDown)]
    pub fn is_shutting_down(&self) -> bool {
        self.0.is_shutting_down()
    }
}

/// The version of the engine inside this build.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
