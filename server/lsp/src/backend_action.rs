//! "Set the project's backend": offered on a device diagnostic (TPU401–TPU404) whose fix is
//! display-only because neither the code nor the configuration names a TPU backend. It edits the
//! configuration file in force (or creates `tpulint.toml` at the workspace folder's root, when
//! the client can create files), after which the device fixes become real ones.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tower_lsp_server::ls_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CreateFile, CreateFileOptions,
    Diagnostic as LspDiagnostic, DocumentChangeOperation, DocumentChanges, OneOf,
    OptionalVersionedTextDocumentIdentifier, Position, Range, ResourceOp, TextDocumentEdit,
    TextEdit, Uri, WorkspaceEdit,
};
use tpulint_analyzer::{Applicability, BackendSetting, Diagnostic, LineIndex, Settings, TextRange};
use tpulint_ide::config_edit::{new_config_with_backend, set_backend};

use crate::actions;
use crate::encoding::PositionEncoding;
use crate::session::{Analysis, Session, file_path};
use crate::to_proto;

/// The device rules whose fixes need to know the backend (they name its device).
const DEVICE_FIX_CODES: [&str; 4] = ["TPU401", "TPU402", "TPU403", "TPU404"];

/// The backends the action offers, as the configuration spells them.
const BACKENDS: [&str; 2] = ["torch_xla", "torchtpu"];

/// Where the project's configuration lives, and what the client can do with files.
pub struct ProjectFiles<'a> {
    /// The configuration file in force, if any.
    pub config_file: Option<&'a Path>,
    /// Where a new `tpulint.toml` goes: the workspace folder holding the document.
    pub new_config_directory: Option<PathBuf>,
    /// The client accepts `CreateFile` operations in workspace edits.
    pub create_files: bool,
}

/// Whether `diagnostic`'s fix is display-only for want of a backend.
pub fn needs_backend(diagnostic: &Diagnostic, settings: &Settings) -> bool {
    settings.backend == BackendSetting::Auto
        && DEVICE_FIX_CODES.contains(&diagnostic.code)
        && diagnostic
            .fix
            .as_ref()
            .is_some_and(|fix| fix.applicability == Applicability::DisplayOnly)
}

/// One action per backend for the diagnostics given (already filtered by [`needs_backend`],
/// as LSP diagnostics); none when there are none or the configuration cannot be edited.
pub fn backend_actions(
    diagnostics: Vec<LspDiagnostic>,
    files: &ProjectFiles<'_>,
    encoding: PositionEncoding,
) -> Vec<CodeActionOrCommand> {
    if diagnostics.is_empty() {
        return Vec::new();
    }
    BACKENDS
        .iter()
        .filter_map(|backend| {
            let (edit, file_name) = config_edit(files, backend, encoding)?;
            Some(CodeActionOrCommand::CodeAction(CodeAction {
                title: format!("tpulint: Set the project's backend to {backend} in {file_name}"),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(diagnostics.clone()),
                edit: Some(edit),
                ..CodeAction::default()
            }))
        })
        .collect()
}

fn config_edit(
    files: &ProjectFiles<'_>,
    backend: &str,
    encoding: PositionEncoding,
) -> Option<(WorkspaceEdit, String)> {
    if let Some(path) = files.config_file {
        let file_name = path.file_name()?.to_string_lossy().into_owned();
        // Read now: the edit must match the file as it is (an unreadable file gets no action).
        let text = std::fs::read_to_string(path).ok()?;
        let edit = set_backend(&file_name, &text, backend);
        let index = LineIndex::new(&text);
        let uri = Uri::from_file_path(path)?;
        let changes = HashMap::from([(
            uri,
            vec![to_proto::text_edit(&text, &index, &edit, encoding)],
        )]);
        return Some((
            WorkspaceEdit {
                changes: Some(changes),
                ..WorkspaceEdit::default()
            },
            file_name,
        ));
    }
    if !files.create_files {
        return None;
    }
    let path = files.new_config_directory.as_ref()?.join("tpulint.toml");
    let uri = Uri::from_file_path(&path)?;
    let origin = Position::new(0, 0);
    let operations = vec![
        DocumentChangeOperation::Op(ResourceOp::Create(CreateFile {
            uri: uri.clone(),
            options: Some(CreateFileOptions {
                overwrite: Some(false),
                ignore_if_exists: Some(true),
            }),
            annotation_id: None,
        })),
        DocumentChangeOperation::Edit(TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier { uri, version: None },
            edits: vec![OneOf::Left(TextEdit::new(
                Range::new(origin, origin),
                new_config_with_backend(backend),
            ))],
        }),
    ];
    Some((
        WorkspaceEdit {
            document_changes: Some(DocumentChanges::Operations(operations)),
            ..WorkspaceEdit::default()
        },
        "tpulint.toml".to_string(),
    ))
}

/// The backend actions for the diagnostics of one analysed text (a document, or a notebook
/// cell's view) that overlap `range`, when the client's `only` admits quick fixes.
pub fn for_range(
    session: &Session,
    uri: &Uri,
    analysis: &Analysis,
    settings: Option<&Settings>,
    range: TextRange,
    only: Option<&[CodeActionKind]>,
) -> Vec<CodeActionOrCommand> {
    let Some(settings) = settings else {
        return Vec::new();
    };
    if !actions::requested(only, &CodeActionKind::QUICKFIX) {
        return Vec::new();
    }
    let negotiated = session.negotiated();
    let diagnostics: Vec<LspDiagnostic> = analysis
        .diagnostics
        .iter()
        .filter(|diagnostic| {
            diagnostic.range.start <= range.end
                && range.start <= diagnostic.range.end
                && needs_backend(diagnostic, settings)
        })
        .map(|diagnostic| {
            to_proto::diagnostic(
                uri,
                &analysis.text,
                &analysis.line_index,
                diagnostic,
                negotiated.encoding,
            )
        })
        .collect();
    if diagnostics.is_empty() {
        return Vec::new();
    }
    let config = session.config();
    let document_path = file_path(uri);
    let files = ProjectFiles {
        config_file: analysis.config_file.as_deref(),
        new_config_directory: new_config_directory(document_path.as_deref(), &config.roots),
        create_files: negotiated.create_files,
    };
    backend_actions(diagnostics, &files, negotiated.encoding)
}

/// The deepest workspace folder holding `path`, else the file's own directory.
pub fn new_config_directory(path: Option<&Path>, roots: &[PathBuf]) -> Option<PathBuf> {
    let path = path?;
    roots
        .iter()
        .filter(|root| path.starts_with(root))
        .max_by_key(|root| root.as_os_str().len())
        .cloned()
        .or_else(|| path.parent().map(Path::to_path_buf))
}
