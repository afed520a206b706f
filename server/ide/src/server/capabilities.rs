//! What the client can do (read once from `initialize`) and what the server advertises.
//!
//! The client's capabilities are read from their JSON, field by field, rather than deserialized
//! into `ls_types::ClientCapabilities`: the derive of that large struct would cost the
//! WebAssembly module room it does not have, and only a few fields matter.

use serde_json::{Value, json};

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

fn flag(capabilities: &Value, pointer: &str) -> bool {
    capabilities
        .pointer(pointer)
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn list_contains(capabilities: &Value, pointer: &str, wanted: &str) -> bool {
    capabilities
        .pointer(pointer)
        .and_then(Value::as_array)
        .is_some_and(|items| items.iter().any(|item| item.as_str() == Some(wanted)))
}

/// Reads the client's `capabilities` (the JSON of `InitializeParams.capabilities`).
pub fn negotiate(capabilities: &Value) -> Negotiated {
    let encoding = if list_contains(capabilities, "/general/positionEncodings", "utf-8") {
        PositionEncoding::Utf8
    } else if list_contains(capabilities, "/general/positionEncodings", "utf-32") {
        PositionEncoding::Utf32
    } else {
        PositionEncoding::Utf16
    };
    Negotiated {
        encoding,
        pull_diagnostics: capabilities
            .pointer("/textDocument/diagnostic")
            .is_some_and(|value| !value.is_null()),
        workspace_diagnostic_refresh: flag(capabilities, "/workspace/diagnostics/refreshSupport"),
        code_action_resolve: list_contains(
            capabilities,
            "/textDocument/codeAction/resolveSupport/properties",
            "edit",
        ),
        configuration_requests: flag(capabilities, "/workspace/configuration"),
        watched_files_registration: flag(
            capabilities,
            "/workspace/didChangeWatchedFiles/dynamicRegistration",
        ),
        apply_edit: flag(capabilities, "/workspace/applyEdit"),
        create_files: list_contains(
            capabilities,
            "/workspace/workspaceEdit/resourceOperations",
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

/// The `InitializeResult` (as JSON, which the native server reads into its protocol types).
pub fn initialize_result(
    negotiated: &Negotiated,
    commands: &[&str],
    server_name: &str,
    version: &str,
) -> Value {
    let encoding = match negotiated.encoding {
        PositionEncoding::Utf8 => "utf-8",
        PositionEncoding::Utf16 => "utf-16",
        PositionEncoding::Utf32 => "utf-32",
    };
    let python_cells = json!([{ "language": "python" }]);
    let mut capabilities = json!({
        "positionEncoding": encoding,
        "textDocumentSync": {
            "openClose": true,
            // Incremental.
            "change": 2,
            "save": { "includeText": false },
        },
        "notebookDocumentSync": {
            "notebookSelector": [
                { "notebook": "jupyter-notebook", "cells": python_cells },
                { "notebook": "*", "cells": python_cells },
            ],
            "save": true,
        },
        "hoverProvider": true,
        "codeActionProvider": {
            "codeActionKinds": [
                "quickfix",
                "source.fixAll",
                source_fix_all_tpulint().as_str(),
                notebook_fix_all_kind().as_str(),
            ],
            "resolveProvider": negotiated.code_action_resolve,
        },
        "executeCommandProvider": { "commands": commands },
        "workspace": {
            "workspaceFolders": { "supported": true, "changeNotifications": true },
        },
    });
    if negotiated.pull_diagnostics {
        capabilities["diagnosticProvider"] = json!({
            "identifier": "tpulint",
            "interFileDependencies": false,
            "workspaceDiagnostics": true,
        });
    }
    json!({
        "capabilities": capabilities,
        "serverInfo": { "name": server_name, "version": version },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
