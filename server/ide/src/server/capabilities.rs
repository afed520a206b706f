//! What the client can do (read once from `initialize`) and what the server advertises.
//!
//! The client's capabilities are read from their JSON, field by field, rather than deserialized
//! into `ls_types::ClientCapabilities`: the derive of that large struct would cost the
//! WebAssembly module room it does not have, and only a few fields matter.

use super::json::{JsonRead, write_string};
use super::notebooks::notebook_fix_all_kind;
use crate::actions::source_fix_all_tpulint;
use crate::encoding::PositionEncoding;

/// The commands the server executes; `workspace/executeCommand` with another is an error.
pub const APPLY_AUTOFIX: &str = "tpulint.applyAutofix";
pub const CHECK_ENVIRONMENT: &str = "tpulint.checkEnvironment";
pub const PRINT_DEBUG_INFORMATION: &str = "tpulint.printDebugInformation";

/// What the client can do, recorded once in `initialize`.
#[derive(Debug, Clone, Default)]
pub struct Negotiated {
    pub encoding: PositionEncoding,
    /// The client pulls diagnostics (`textDocument/diagnostic`); otherwise the server pushes.
    pub pull_diagnostics: bool,
    pub workspace_diagnostic_refresh: bool,
    pub code_action_resolve: bool,
    pub configuration_requests: bool,
    pub watched_files_registration: bool,
    pub apply_edit: bool,
    /// Workspace edits may create files (`resourceOperations` includes `create`).
    pub create_files: bool,
}

fn flag(capabilities: &impl JsonRead, path: &[&str]) -> bool {
    capabilities
        .at(path)
        .and_then(JsonRead::as_bool)
        .unwrap_or(false)
}

fn list_contains(capabilities: &impl JsonRead, path: &[&str], wanted: &str) -> bool {
    capabilities
        .at(path)
        .and_then(JsonRead::as_array)
        .is_some_and(|items| items.iter().any(|item| item.as_str() == Some(wanted)))
}

/// Reads the client's `capabilities` (the JSON of `InitializeParams.capabilities`).
pub fn negotiate(capabilities: &impl JsonRead) -> Negotiated {
    let encodings = ["general", "positionEncodings"];
    let encoding = if list_contains(capabilities, &encodings, "utf-8") {
        PositionEncoding::Utf8
    } else if list_contains(capabilities, &encodings, "utf-32") {
        PositionEncoding::Utf32
    } else {
        PositionEncoding::Utf16
    };
    Negotiated {
        encoding,
        pull_diagnostics: capabilities
            .at(&["textDocument", "diagnostic"])
            .is_some_and(|value| !value.is_null()),
        workspace_diagnostic_refresh: flag(
            capabilities,
            &["workspace", "diagnostics", "refreshSupport"],
        ),
        code_action_resolve: list_contains(
            capabilities,
            &["textDocument", "codeAction", "resolveSupport", "properties"],
            "edit",
        ),
        configuration_requests: flag(capabilities, &["workspace", "configuration"]),
        watched_files_registration: flag(
            capabilities,
            &["workspace", "didChangeWatchedFiles", "dynamicRegistration"],
        ),
        apply_edit: flag(capabilities, &["workspace", "applyEdit"]),
        create_files: list_contains(
            capabilities,
            &["workspace", "workspaceEdit", "resourceOperations"],
            "create",
        ),
    }
}

/// The commands a host executes: the native server all of them, the browser's (which cannot
/// start a Python interpreter) `tpulint.applyAutofix` and `tpulint.printDebugInformation`.
pub fn commands(environment_check: bool) -> Vec<&'static str> {
    let mut commands = vec![APPLY_AUTOFIX];
    if environment_check {
        commands.push(CHECK_ENVIRONMENT);
    }
    commands.push(PRINT_DEBUG_INFORMATION);
    commands
}

/// The `InitializeResult`, as JSON text (which the native server reads into its protocol
/// types; written by hand, as the WebAssembly module has no room for a JSON tree builder).
pub fn initialize_result(
    negotiated: &Negotiated,
    commands: &[&str],
    server_name: &str,
    version: &str,
) -> String {
    let encoding = match negotiated.encoding {
        PositionEncoding::Utf8 => "utf-8",
        PositionEncoding::Utf16 => "utf-16",
        PositionEncoding::Utf32 => "utf-32",
    };
    let strings = |items: &[&str]| {
        let mut out = String::from("[");
        for (index, item) in items.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            write_string(item, &mut out);
        }
        out.push(']');
        out
    };
    let kinds = strings(&[
        "quickfix",
        "source.fixAll",
        source_fix_all_tpulint().as_str(),
        notebook_fix_all_kind().as_str(),
    ]);
    let python_cells = r#"[{"language":"python"}]"#;
    // The protocol's `TextDocumentSyncKind.Incremental` is 2.
    let mut capabilities = format!(
        concat!(
            r#"{{"positionEncoding":"{encoding}","#,
            r#""textDocumentSync":{{"openClose":true,"change":2,"save":{{"includeText":false}}}},"#,
            r#""notebookDocumentSync":{{"notebookSelector":["#,
            r#"{{"notebook":"jupyter-notebook","cells":{cells}}},{{"notebook":"*","cells":{cells}}}"#,
            r#"],"save":true}},"#,
            r#""hoverProvider":true,"#,
            r#""codeActionProvider":{{"codeActionKinds":{kinds},"resolveProvider":{resolve}}},"#,
            r#""executeCommandProvider":{{"commands":{commands}}},"#,
            r#""workspace":{{"workspaceFolders":{{"supported":true,"changeNotifications":true}}}}"#,
        ),
        encoding = encoding,
        cells = python_cells,
        kinds = kinds,
        resolve = negotiated.code_action_resolve,
        commands = strings(commands),
    );
    if negotiated.pull_diagnostics {
        capabilities.push_str(concat!(
            r#","diagnosticProvider":{"identifier":"tpulint","#,
            r#""interFileDependencies":false,"workspaceDiagnostics":true}"#,
        ));
    }
    capabilities.push('}');
    let mut result = format!(r#"{{"capabilities":{capabilities},"serverInfo":{{"name":"#);
    write_string(server_name, &mut result);
    result.push_str(r#","version":"#);
    write_string(version, &mut result);
    result.push_str("}}");
    result
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn the_result_is_json() {
        for pull in [false, true] {
            let negotiated = Negotiated {
                pull_diagnostics: pull,
                ..Negotiated::default()
            };
            let text = initialize_result(&negotiated, &commands(true), "tpulint", "1.0");
            let value: Value = serde_json::from_str(&text).expect(&text);
            assert_eq!(value["serverInfo"]["name"], "tpulint");
            assert_eq!(value["capabilities"]["positionEncoding"], "utf-16");
            assert_eq!(
                value["capabilities"].get("diagnosticProvider").is_some(),
                pull
            );
        }
    }

    #[test]
    fn reads_the_fields_that_matter() {
        let negotiated = negotiate(&json!({
            "general": { "positionEncodings": ["utf-32", "utf-16"] },
            "textDocument": {
                "diagnostic": {},
                "codeAction": { "resolveSupport": { "properties": ["edit"] } },
            },
            "workspace": {
                "applyEdit": true,
                "workspaceEdit": { "resourceOperations": ["create", "rename"] },
            },
        }));
        assert_eq!(negotiated.encoding, PositionEncoding::Utf32);
        assert!(negotiated.pull_diagnostics);
        assert!(negotiated.code_action_resolve);
        assert!(negotiated.apply_edit && negotiated.create_files);
        assert!(!negotiated.configuration_requests);
        let nothing = negotiate(&json!({}));
        assert_eq!(nothing.encoding, PositionEncoding::Utf16);
        assert!(!nothing.pull_diagnostics);
    }
}
