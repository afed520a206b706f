//! Edits an editor offers beyond a rule's own fix: "Disable TPUxxx for this line" (a `# noqa`
//! edit that merges into an existing directive) and "Fix all" (the fix loop, reduced to one
//! minimal edit). Everything here is in byte offsets; the LSP layer converts positions.

use tpulint_analyzer::suppression::find_noqa;
use tpulint_analyzer::{
    Applicability, Diagnostic, Edit, LineIndex, Settings, rule_by_code_or_name, syntax::node_text,
};
use tree_sitter::Tree;

/// The edit that suppresses `diagnostic` on its first line: a new `  # noqa: CODE` at the end
/// of the line, or `, CODE` appended to the line's existing `# noqa: …` list. `None` when the
/// line already has a bare `# noqa` or lists the code, and for diagnostics no rule reports
/// (syntax errors), which no `# noqa` silences.
pub fn noqa_edit(
    text: &str,
    index: &LineIndex,
    tree: &Tree,
    diagnostic: &Diagnostic,
) -> Option<Edit> {
    rule_by_code_or_name(diagnostic.code)?;
    let line = index.line_of(diagnostic.range.start);
    let line_range = index.line_range(line, text);
    let code = diagnostic.code;
    if let Some((comment_start, comment)) = line_comment(text, line_range.clone(), tree)
        && let Some(directive) = find_noqa(comment)
    {
        // A bare `# noqa` already silences every code; a listed one may already name this code.
        let codes = directive.codes?;
        if codes
            .iter()
            .any(|(listed, _)| listed.eq_ignore_ascii_case(code))
        {
            return None;
        }
        return Some(Edit::insert(
            comment_start + directive.range.end,
            format!(", {code}"),
        ));
    }
    let content_end = line_range.start + text[line_range.clone()].trim_end().len();
    Some(Edit::replace(
        content_end..line_range.end,
        format!("  # noqa: {code}"),
    ))
}

/// The comment on a line, found through the tree so that `#` inside a string is not mistaken
/// for one. Returns its start offset and text.
fn line_comment<'t>(
    text: &'t str,
    line_range: std::ops::Range<usize>,
    tree: &Tree,
) -> Option<(usize, &'t str)> {
    let line_text = &text[line_range.clone()];
    for (position, _) in line_text.match_indices('#') {
        let at = line_range.start + position;
        let node = tree.root_node().descendant_for_byte_range(at, at + 1)?;
        if node.kind() == "comment" && node.start_byte() == at {
            let end = node.end_byte().min(line_range.end);
            return text.get(at..end).map(|comment| (at, comment));
        }
        if node.kind() == "comment" {
            // A `#` inside a comment that started earlier on the line.
            let start = node.start_byte().max(line_range.start);
            return Some((start, node_text(node, text)));
        }
    }
    None
}

/// Every fix the settings allow, applied to a fixed point, as one edit covering only the part of
/// the text that changed (so the editor keeps cursors and folds elsewhere). `None` when nothing
/// changes.
pub fn fix_all_edit(text: &str, settings: &Settings, unsafe_fixes: bool) -> Option<Edit> {
    let threshold = if unsafe_fixes {
        Applicability::Unsafe
    } else {
        Applicability::Safe
    };
    let fixed = crate::fix::fix_text(text, settings, threshold);
    minimal_edit(text, &fixed)
}

/// The single replacement that turns `old` into `new`, trimmed to the changed middle.
pub fn minimal_edit(old: &str, new: &str) -> Option<Edit> {
    if old == new {
        return None;
    }
    let mut prefix = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(prefix) || !new.is_char_boundary(prefix) {
        prefix -= 1;
    }
    let max_suffix = old.len().min(new.len()) - prefix;
    let mut suffix = old
        .bytes()
        .rev()
        .zip(new.bytes().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(old.len() - suffix) || !new.is_char_boundary(new.len() - suffix) {
        suffix -= 1;
    }
    Some(Edit::replace(
        prefix..old.len() - suffix,
        &new[prefix..new.len() - suffix],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpulint_analyzer::{Severity, syntax};

    fn diagnostic_at(text: &str, needle: &str, code: &'static str) -> Diagnostic {
        let start = text.find(needle).expect("needle");
        Diagnostic {
            code,
            name: "test",
            message: String::new(),
            range: start..start + needle.len(),
            severity: Severity::Warning,
            fix: None,
            related: Vec::new(),
            tag: None,
        }
    }

    fn apply(text: &str, needle: &str, code: &'static str) -> Option<String> {
        let tree = syntax::parse(text, None).expect("parses");
        let index = LineIndex::new(text);
        let edit = noqa_edit(text, &index, &tree, &diagnostic_at(text, needle, code))?;
        let mut out = text.to_string();
        out.replace_range(edit.range, &edit.content);
        Some(out)
    }

    #[test]
    fn a_syntax_error_is_never_offered_a_noqa() {
        let text = "def f(:\n    pass\n";
        let tree = syntax::parse(text, None).expect("parses");
        let errors = tpulint_analyzer::check_tree(text, &tree, &Settings::default());
        assert!(
            errors
                .iter()
                .any(|d| d.code == tpulint_analyzer::INVALID_SYNTAX),
            "{errors:?}"
        );
        for error in &errors {
            assert_eq!(noqa_edit(text, &LineIndex::new(text), &tree, error), None);
        }
    }

    #[test]
    fn adds_a_new_directive() {
        assert_eq!(
            apply("x = t.item()   \ny = 1\n", "t.item()", "TPU101").as_deref(),
            Some("x = t.item()  # noqa: TPU101\ny = 1\n")
        );
    }

    #[test]
    fn merges_into_an_existing_list() {
        assert_eq!(
            apply(
                "x = t.item()  # noqa: TPU102 trailing\n",
                "t.item()",
                "TPU101"
            )
            .as_deref(),
            Some("x = t.item()  # noqa: TPU102, TPU101 trailing\n")
        );
        assert_eq!(
            apply("x = t.item()  # noqa: TPU101\n", "t.item()", "TPU101"),
            None
        );
        assert_eq!(apply("x = t.item()  # NOQA\n", "t.item()", "TPU101"), None);
    }

    #[test]
    fn keeps_other_comments_and_ignores_hashes_in_strings() {
        assert_eq!(
            apply("x = f('# noqa: TPU102')  # why\n", "f(", "TPU101").as_deref(),
            Some("x = f('# noqa: TPU102')  # why  # noqa: TPU101\n")
        );
        assert_eq!(
            apply("x = f()  # type: ignore # noqa: E501\n", "f(", "TPU101").as_deref(),
            Some("x = f()  # type: ignore # noqa: E501, TPU101\n")
        );
    }

    #[test]
    fn minimal_edit_trims_common_ends() {
        let edit = minimal_edit("a = 1\nb = 2\nc = 3\n", "a = 1\nb = 22\nc = 3\n").expect("edit");
        assert_eq!(edit.range, 11..11);
        assert_eq!(edit.content, "2");
        let edit = minimal_edit("é", "è").expect("edit");
        assert_eq!(edit.range, 0..2);
    }
}
