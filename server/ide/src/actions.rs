//! Code actions (a rule's quick fix, "Disable for this line", "Fix all tpulint issues")
//! and hover, built from an [`Analysis`] of the document's current version.

use std::collections::HashMap;

use ls_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, Hover, HoverContents, MarkupContent,
    MarkupKind, TextEdit, Uri, WorkspaceEdit,
};
use tpulint_analyzer::{Applicability, Edit, TextRange, rule_by_code_or_name};

use crate::analysis::Analysis;
use crate::encoding::PositionEncoding;
use crate::to_proto;

/// The kind of the "Fix all" source action, so that `editor.codeActionsOnSave` can name it.
pub fn source_fix_all_tpulint() -> CodeActionKind {
    CodeActionKind::new("source.fixAll.tpulint")
}

pub const FIX_ALL_TITLE: &str = "Fix all tpulint issues";

/// What a lazily resolved action carries in its `data`.
#[derive(Debug, PartialEq, Eq)]
pub struct ResolveData {
    pub uri: Uri,
    pub version: i32,
}

impl ResolveData {
    /// The `data` JSON, built directly: serializing into a `serde_json::Value` would link a
    /// second serializer into the WebAssembly module.
    pub fn to_json(&self) -> serde_json::Value {
        let mut data = serde_json::Map::new();
        data.insert("uri".to_string(), self.uri.as_str().into());
        data.insert("version".to_string(), self.version.into());
        serde_json::Value::Object(data)
    }

    /// Reads the `data` JSON back.
    pub fn from_json(data: &impl crate::server::json::JsonRead) -> Option<ResolveData> {
        use std::str::FromStr;
        Some(ResolveData {
            uri: Uri::from_str(data.get("uri")?.as_str()?).ok()?,
            version: i32::try_from(data.get("version")?.as_i64()?).ok()?,
        })
    }
}

/// Whether the client's `only` filter lets actions of `kind` through (`source.fixAll` admits
/// `source.fixAll.tpulint`).
pub fn requested(only: Option<&[CodeActionKind]>, kind: &CodeActionKind) -> bool {
    let Some(only) = only else { return true };
    only.iter().any(|wanted| {
        kind.as_str() == wanted.as_str()
            || kind
                .as_str()
                .strip_prefix(wanted.as_str())
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

fn workspace_edit(uri: &Uri, edits: Vec<TextEdit>) -> WorkspaceEdit {
    WorkspaceEdit {
        changes: Some(HashMap::from([(uri.clone(), edits)])),
        ..WorkspaceEdit::default()
    }
}

fn lsp_edits(analysis: &Analysis, edits: &[Edit], encoding: PositionEncoding) -> Vec<TextEdit> {
    edits
        .iter()
        .map(|edit| to_proto::text_edit(&analysis.text, &analysis.line_index, edit, encoding))
        .collect()
}

/// The code actions for `range` (byte offsets) of the analysed document.
pub fn code_actions(
    uri: &Uri,
    analysis: &Analysis,
    range: TextRange,
    only: Option<&[CodeActionKind]>,
    encoding: PositionEncoding,
    resolve_lazily: bool,
) -> Vec<CodeActionOrCommand> {
    let mut actions = Vec::new();
    if requested(only, &CodeActionKind::QUICKFIX) {
        for diagnostic in analysis.diagnostics.iter().filter(|diagnostic| {
            diagnostic.range.start <= range.end && range.start <= diagnostic.range.end
        }) {
            let lsp_diagnostic = to_proto::diagnostic(
                uri,
                &analysis.text,
                &analysis.line_index,
                diagnostic,
                encoding,
            );
            if let Some(fix) = &diagnostic.fix {
                let title = quick_fix_title(diagnostic.code, &fix.title, fix.applicability);
                actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title,
                    kind: Some(CodeActionKind::QUICKFIX),
                    diagnostics: Some(vec![lsp_diagnostic.clone()]),
                    edit: Some(workspace_edit(
                        uri,
                        lsp_edits(analysis, &fix.edits, encoding),
                    )),
                    is_preferred: Some(fix.applicability == Applicability::Safe),
                    ..CodeAction::default()
                }));
            }
            if let Some(edit) = crate::edits::noqa_edit(
                &analysis.text,
                &analysis.line_index,
                &analysis.tree,
                diagnostic,
            ) {
                actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title: noqa_title(diagnostic.code),
                    kind: Some(CodeActionKind::QUICKFIX),
                    diagnostics: Some(vec![lsp_diagnostic]),
                    edit: Some(workspace_edit(
                        uri,
                        lsp_edits(analysis, std::slice::from_ref(&edit), encoding),
                    )),
                    ..CodeAction::default()
                }));
            }
        }
    }
    let fix_all_kind = source_fix_all_tpulint();
    if requested(only, &fix_all_kind) && has_fix_all_candidates(analysis) {
        let mut action = CodeAction {
            title: FIX_ALL_TITLE.to_string(),
            kind: Some(fix_all_kind),
            ..CodeAction::default()
        };
        if resolve_lazily {
            action.data = Some(
                ResolveData {
                    uri: uri.clone(),
                    version: analysis.version,
                }
                .to_json(),
            );
        } else {
            action.edit = Some(fix_all_edit(uri, analysis, encoding).unwrap_or_default());
        }
        actions.push(CodeActionOrCommand::CodeAction(action));
    }
    actions
}

/// A rule's quick fix as the light bulb lists it: prefixed with its source, as ruff's are
/// (`Ruff (F401): Remove unused import`), so it is told apart from Pylance's or ruff's; a
/// display-only fix is marked as a suggestion.
pub fn quick_fix_title(code: &str, title: &str, applicability: Applicability) -> String {
    match applicability {
        Applicability::DisplayOnly => format!("tpulint ({code}): {title} (suggestion)"),
        _ => format!("tpulint ({code}): {title}"),
    }
}

/// The title of the action adding `# noqa: CODE` to the diagnostic's line.
pub fn noqa_title(code: &str) -> String {
    format!("tpulint ({code}): Disable for this line")
}

/// Whether some diagnostic has a fix that "Fix all" would apply.
fn has_fix_all_candidates(analysis: &Analysis) -> bool {
    analysis.diagnostics.iter().any(|diagnostic| {
        diagnostic
            .fix
            .as_ref()
            .is_some_and(|fix| match fix.applicability {
                Applicability::Safe => true,
                Applicability::Unsafe => analysis.unsafe_fixes,
                Applicability::DisplayOnly => false,
            })
    })
}

/// "Fix all" as a workspace edit; `None` when nothing would change.
pub fn fix_all_edit(
    uri: &Uri,
    analysis: &Analysis,
    encoding: PositionEncoding,
) -> Option<WorkspaceEdit> {
    let settings = analysis.settings.as_ref()?;
    let edit = crate::edits::fix_all_edit(&analysis.text, settings, analysis.unsafe_fixes)?;
    Some(workspace_edit(
        uri,
        lsp_edits(analysis, std::slice::from_ref(&edit), encoding),
    ))
}

/// A rule's documentation (Markdown) from the engine itself; a build without it (the
/// WebAssembly module) is given the documentation by its host instead.
pub fn builtin_docs(code: &str) -> String {
    rule_by_code_or_name(code).map_or_else(String::new, |id| id.meta().docs_markdown())
}

/// The documentation of every rule with a diagnostic at `offset`; `docs` gives a rule's
/// Markdown by code ([`builtin_docs`] natively).
pub fn hover(
    analysis: &Analysis,
    offset: usize,
    encoding: PositionEncoding,
    docs: &dyn Fn(&str) -> String,
) -> Option<Hover> {
    let mut codes: Vec<&'static str> = Vec::new();
    let mut first_range = None;
    for diagnostic in &analysis.diagnostics {
        if diagnostic.range.start <= offset && offset <= diagnostic.range.end {
            first_range.get_or_insert(diagnostic.range.clone());
            if !codes.contains(&diagnostic.code) {
                codes.push(diagnostic.code);
            }
        }
    }
    let sections: Vec<String> = codes
        .iter()
        .filter_map(|code| rule_by_code_or_name(code))
        .map(|id| {
            let meta = id.meta();
            format!(
                "# {} ({})\n\n{}\n[Rule documentation]({})",
                meta.code,
                meta.name,
                docs(meta.code).trim_end(),
                meta.url()
            )
        })
        .collect();
    if sections.is_empty() {
        return None;
    }
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: sections.join("\n\n---\n\n"),
        }),
        range: first_range
            .map(|range| to_proto::range(&analysis.text, &analysis.line_index, range, encoding)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_filters_by_kind_prefix() {
        let fix_all = source_fix_all_tpulint();
        assert!(requested(None, &fix_all));
        assert!(requested(Some(&[CodeActionKind::SOURCE_FIX_ALL]), &fix_all));
        assert!(requested(Some(&[CodeActionKind::SOURCE]), &fix_all));
        assert!(!requested(Some(&[CodeActionKind::QUICKFIX]), &fix_all));
        assert!(!requested(
            Some(&[CodeActionKind::new("source.fixAl")]),
            &fix_all
        ));
    }
}
