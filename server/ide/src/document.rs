//! One open text document: its text, version, line index, and a syntax tree kept up to date by
//! incremental edits.
//!
//! Edits are applied synchronously as notifications arrive (never after an `.await`), so that
//! changes are applied in arrival order; the tree is only *edited* here (cheap), and re-parsed
//! incrementally by the analysis that runs off the message loop.

use std::sync::Arc;

use ls_types::TextDocumentContentChangeEvent;
use tpulint_analyzer::incremental::IncrementalState;
use tpulint_analyzer::{LineIndex, syntax};
use tree_sitter::{InputEdit, Point, Tree};

use crate::encoding::PositionEncoding;
use crate::from_proto;

/// What the analysis needs from a document, detached from the session's lock.
#[derive(Clone)]
pub struct DocumentSnapshot {
    pub text: Arc<str>,
    pub line_index: Arc<LineIndex>,
    pub version: i32,
    /// A tree for `text`, or an older tree edited to match it (`tree_is_current == false`), from
    /// which the analysis re-parses incrementally.
    pub tree: Option<Tree>,
    pub tree_is_current: bool,
    /// `tree` is what a fresh parse of its text gives (it has no syntax error, or it was parsed
    /// afresh); see [`DocumentSnapshot::parse_quick`].
    pub tree_is_exact: bool,
    /// The last check stored for this document (of this or an earlier version) and the last
    /// one of a text without syntax errors, which the next check reuses where that is sound
    /// ([`crate::analysis::check`]).
    pub previous: Vec<PreviousCheck>,
}

/// A check of some version of a document: its text and what an incremental re-check reuses.
#[derive(Clone)]
pub struct PreviousCheck {
    pub text: Arc<str>,
    pub state: Arc<IncrementalState>,
}

impl DocumentSnapshot {
    /// The tree for `text`, equal to a fresh parse of it (what `tpulint check` parses): the
    /// stored one when current and exact, else an incremental re-parse — and a fresh parse when
    /// that one has syntax errors: tree-sitter's incremental re-parse can recover from an error
    /// differently from a fresh parse of the same text (found by the `lsp_edits` fuzz target).
    pub fn parse(&self) -> Option<Tree> {
        self.parse_as(true, &|| false).map(|(tree, _)| tree)
    }

    /// [`DocumentSnapshot::parse`], stopping (`None`) once `cancelled` returns true: its fresh
    /// parse polls it ([`syntax::parse_cancellable`]).
    pub fn parse_cancellable(&self, cancelled: &dyn Fn() -> bool) -> Option<Tree> {
        self.parse_as(true, cancelled).map(|(tree, _)| tree)
    }

    /// The tree for `text` without the fresh parse: an incremental re-parse that has a syntax
    /// error is returned as it is, with `false` (it may have recovered from the error otherwise
    /// than a fresh parse would). `true`: the tree is what [`DocumentSnapshot::parse`] gives.
    /// The language server shows diagnostics of such a tree at once and replaces them by those
    /// of the exact tree when the document stays unchanged (`tpulint_lsp`'s push worker).
    pub fn parse_quick(&self) -> Option<(Tree, bool)> {
        self.parse_as(false, &|| false)
    }

    fn parse_as(&self, exact: bool, cancelled: &dyn Fn() -> bool) -> Option<(Tree, bool)> {
        match (&self.tree, self.tree_is_current) {
            (Some(tree), true) if self.tree_is_exact || !exact => {
                Some((tree.clone(), self.tree_is_exact))
            }
            (Some(_), true) | (None, _) => {
                Some((syntax::parse_cancellable(&self.text, cancelled)?, true))
            }
            (Some(old), false) => {
                let tree = syntax::parse(&self.text, Some(old))?;
                if !tree.root_node().has_error() {
                    Some((tree, true))
                } else if exact {
                    Some((syntax::parse_cancellable(&self.text, cancelled)?, true))
                } else {
                    Some((tree, false))
                }
            }
        }
    }
}

pub struct TextDocument {
    text: Arc<str>,
    line_index: Arc<LineIndex>,
    version: i32,
    tree: Option<Tree>,
    tree_is_current: bool,
    tree_is_exact: bool,
    previous: Option<PreviousCheck>,
    previous_clean: Option<PreviousCheck>,
}

impl TextDocument {
    /// A newly opened document; it is parsed by its first analysis, not here.
    pub fn new(text: String, version: i32) -> TextDocument {
        let line_index = Arc::new(LineIndex::new(&text));
        TextDocument {
            text: text.into(),
            line_index,
            version,
            tree: None,
            tree_is_current: false,
            tree_is_exact: false,
            previous: None,
            previous_clean: None,
        }
    }

    pub fn text(&self) -> &Arc<str> {
        &self.text
    }

    pub fn line_index(&self) -> &Arc<LineIndex> {
        &self.line_index
    }

    pub fn version(&self) -> i32 {
        self.version
    }

    pub fn snapshot(&self) -> DocumentSnapshot {
        DocumentSnapshot {
            text: self.text.clone(),
            line_index: self.line_index.clone(),
            version: self.version,
            tree: self.tree.clone(),
            tree_is_current: self.tree_is_current,
            tree_is_exact: self.tree_is_exact,
            previous: self
                .previous
                .iter()
                .chain(&self.previous_clean)
                .cloned()
                .collect(),
        }
    }

    /// Applies `didChange` content changes in order. A change without a range replaces the
    /// whole text (and drops the tree, since nothing can be reused).
    pub fn apply_changes(
        &mut self,
        changes: Vec<TextDocumentContentChangeEvent>,
        version: i32,
        encoding: PositionEncoding,
    ) {
        for change in changes {
            match change.range {
                None => {
                    self.text = change.text.into();
                    self.tree = None;
                    self.tree_is_current = false;
                    self.tree_is_exact = false;
                }
                Some(range) => {
                    let byte_range =
                        from_proto::text_range(&self.text, &self.line_index, range, encoding);
                    self.replace(byte_range, &change.text);
                }
            }
            self.line_index = Arc::new(LineIndex::new(&self.text));
        }
        self.version = version;
    }

    fn replace(&mut self, range: std::ops::Range<usize>, insertion: &str) {
        let old = &*self.text;
        let mut new_text = String::with_capacity(old.len() - range.len() + insertion.len());
        new_text.push_str(&old[..range.start]);
        new_text.push_str(insertion);
        new_text.push_str(&old[range.end..]);
        if let Some(tree) = self.tree.as_mut() {
            let start_position = point_at(old, range.start);
            let old_end_position = point_at(old, range.end);
            let new_end_position = advance(start_position, insertion);
            tree.edit(&InputEdit {
                start_byte: range.start,
                old_end_byte: range.end,
                new_end_byte: range.start + insertion.len(),
                start_position,
                old_end_position,
                new_end_position,
            });
            self.tree_is_current = false;
            self.tree_is_exact = false;
        }
        self.text = new_text.into();
    }

    /// Keeps a check for the next one to reuse (any version: the next check compares texts).
    /// While a bracket is unclosed the tree changes far from the cursor, so the last check of a
    /// text without syntax errors is kept as well.
    pub fn store_check(&mut self, check: PreviousCheck) {
        if check.state.has_syntax_error() {
            if let Some(previous) = self.previous.take()
                && !previous.state.has_syntax_error()
            {
                self.previous_clean = Some(previous);
            }
        } else {
            self.previous_clean = None;
        }
        self.previous = Some(check);
    }

    /// Stores the tree an analysis parsed for `version` (`exact`: equal to a fresh parse, see
    /// [`DocumentSnapshot::parse_quick`]), if the document has not moved on since; an exact tree
    /// replaces one that was not.
    pub fn store_tree(&mut self, version: i32, tree: Tree, exact: bool) {
        if self.version == version && (!self.tree_is_current || (exact && !self.tree_is_exact)) {
            self.tree = Some(tree);
            self.tree_is_current = true;
            self.tree_is_exact = exact;
        }
    }
}

/// tree-sitter's point (row, byte column) of `offset`; rows count `\n`, as tree-sitter does.
fn point_at(text: &str, offset: usize) -> Point {
    let before = &text.as_bytes()[..offset];
    let row = before.iter().filter(|&&b| b == b'\n').count();
    let column = before.iter().rev().take_while(|&&b| b != b'\n').count();
    Point::new(row, column)
}

/// The point after inserting `insertion` at `start`.
fn advance(start: Point, insertion: &str) -> Point {
    match insertion.rfind('\n') {
        Some(last_newline) => Point::new(
            start.row + insertion.matches('\n').count(),
            insertion.len() - last_newline - 1,
        ),
        None => Point::new(start.row, start.column + insertion.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ls_types::{Position, Range};

    fn change(range: (u32, u32, u32, u32), text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: Some(Range::new(
                Position::new(range.0, range.1),
                Position::new(range.2, range.3),
            )),
            range_length: None,
            text: text.to_string(),
        }
    }

    #[test]
    fn incremental_edits_keep_the_tree_equal_to_a_fresh_parse() {
        let mut document = TextDocument::new("import torch\nx = 1\n".to_string(), 1);
        let tree = document.snapshot().parse().expect("parses");
        document.store_tree(1, tree, true);
        document.apply_changes(
            vec![change((1, 4, 1, 5), "torch.ones(3)\ny = x.item()")],
            2,
            PositionEncoding::Utf16,
        );
        assert_eq!(
            &**document.text(),
            "import torch\nx = torch.ones(3)\ny = x.item()\n"
        );
        let snapshot = document.snapshot();
        assert!(!snapshot.tree_is_current);
        let incremental = snapshot.parse().expect("parses");
        let fresh = syntax::parse(&snapshot.text, None).expect("parses");
        assert_eq!(
            incremental.root_node().to_sexp(),
            fresh.root_node().to_sexp()
        );
    }

    /// A comment less indented than its block inside brackets (tree-sitter-python issue 256):
    /// a fresh parse blanks it and retries (`syntax::parse_with`); edits before, on and after it
    /// keep the editor's tree equal to what `tpulint check` parses.
    #[test]
    fn edits_around_a_blanked_comment_keep_the_tree_equal_to_a_fresh_parse() {
        let text = "def f():\n    x = (1 +\n# c\n         2)\n    return x\n";
        let mut document = TextDocument::new(text.to_string(), 1);
        let tree = document.snapshot().parse().expect("parses");
        assert!(!tree.root_node().has_error());
        document.store_tree(1, tree, true);
        let edits = [
            ((4, 12, 4, 12), " + 1"),
            ((2, 3, 2, 3), "omment"),
            ((1, 4, 1, 4), "y = 0\n    "),
            ((0, 4, 0, 5), "g"),
        ];
        for (version, (range, inserted)) in (2..).zip(edits) {
            document.apply_changes(
                vec![change(range, inserted)],
                version,
                PositionEncoding::Utf16,
            );
            let snapshot = document.snapshot();
            let incremental = snapshot.parse().expect("parses");
            let fresh = syntax::parse(&snapshot.text, None).expect("parses");
            assert_eq!(
                incremental.root_node().to_sexp(),
                fresh.root_node().to_sexp(),
                "{}",
                snapshot.text
            );
            document.store_tree(version, incremental, true);
        }
    }

    /// Found by the `lsp_edits` fuzz target (`fuzz/regressions/lsp_edits/error-recovery`): after
    /// these edits, tree-sitter's incremental re-parse recovered from the unclosed `(` otherwise
    /// than a fresh parse (three "cannot parse" errors and no TPU101, against "`(` is never
    /// closed" and the TPU101 `tpulint check` reports).
    #[test]
    fn a_re_parse_with_syntax_errors_gives_what_a_fresh_parse_gives() {
        let initial = "import torch\nx = torch.zeros(3).cuda()\nfor b in loader:\n    loss = model(b)\n    print(loss.item())\n";
        let mut document = TextDocument::new(initial.to_string(), 0);
        let tree = document.snapshot().parse().expect("parses");
        document.store_tree(0, tree, true);
        let settings = tpulint_analyzer::Settings::default();
        let edits = [
            ((5, 24, 5, 35), "i"),
            ((1, 30, 1, 12), ":(\n😀😀\n\n\n\n"),
            ((0, 24, 0, 24), "\n😀\n"),
        ];
        for (version, (range, text)) in (1..).zip(edits) {
            document.apply_changes(vec![change(range, text)], version, PositionEncoding::Utf8);
            let snapshot = document.snapshot();
            let tree = snapshot.parse().expect("parses");
            let fresh = syntax::parse(&snapshot.text, None).expect("parses");
            assert_eq!(
                tpulint_analyzer::check_tree(&snapshot.text, &tree, &settings),
                tpulint_analyzer::check_tree(&snapshot.text, &fresh, &settings),
                "after edit {version}: {:?}",
                snapshot.text
            );
            document.store_tree(version, tree, true);
        }
    }

    /// The language server's order on the same edits: the quick tree is stored first (not
    /// exact when it has a syntax error), then the exact one replaces it; the exact tree is always
    /// a fresh parse's, and on this sequence the quick one once is not (which is why it says so).
    #[test]
    fn a_quick_parse_says_when_it_may_differ_and_the_exact_tree_replaces_it() {
        let initial = "import torch\nx = torch.zeros(3).cuda()\nfor b in loader:\n    loss = model(b)\n    print(loss.item())\n";
        let mut document = TextDocument::new(initial.to_string(), 0);
        let (tree, exact) = document.snapshot().parse_quick().expect("parses");
        assert!(exact, "a first parse is a fresh one");
        document.store_tree(0, tree, exact);
        let edits = [
            ((5, 24, 5, 35), "i"),
            ((1, 30, 1, 12), ":(\n😀😀\n\n\n\n"),
            ((0, 24, 0, 24), "\n😀\n"),
        ];
        let mut differed = 0;
        for (version, (range, text)) in (1..).zip(edits) {
            document.apply_changes(vec![change(range, text)], version, PositionEncoding::Utf8);
            let (quick, exact) = document.snapshot().parse_quick().expect("parses");
            let fresh = syntax::parse(document.text(), None).expect("parses");
            assert_eq!(exact, !quick.root_node().has_error());
            if exact {
                assert_eq!(quick.root_node().to_sexp(), fresh.root_node().to_sexp());
            }
            differed += usize::from(quick.root_node().to_sexp() != fresh.root_node().to_sexp());
            document.store_tree(version, quick, exact);
            let snapshot = document.snapshot();
            assert!(snapshot.tree_is_current);
            let tree = snapshot.parse().expect("parses");
            assert_eq!(tree.root_node().to_sexp(), fresh.root_node().to_sexp());
            document.store_tree(version, tree, true);
            let (stored, exact) = document.snapshot().parse_quick().expect("parses");
            assert!(exact, "the exact tree replaced the quick one");
            assert_eq!(stored.root_node().to_sexp(), fresh.root_node().to_sexp());
        }
        assert_eq!(
            differed, 1,
            "the fuzz-found recovery difference is exercised"
        );
    }

    fn checked(text: &str) -> PreviousCheck {
        let tree = syntax::parse(text, None).expect("parses");
        let (_, state, _) =
            crate::analysis::check(text, &tree, &tpulint_analyzer::Settings::default(), &[]);
        PreviousCheck {
            text: text.into(),
            state,
        }
    }

    #[test]
    fn the_last_check_without_syntax_errors_is_kept_while_a_bracket_is_open() {
        let mut document = TextDocument::new("x = f()\n".to_string(), 1);
        document.store_check(checked("x = f()\n"));
        document.store_check(checked("x = f(\n"));
        document.store_check(checked("x = f(a\n"));
        let texts: Vec<String> = document
            .snapshot()
            .previous
            .iter()
            .map(|check| check.text.to_string())
            .collect();
        assert_eq!(texts, ["x = f(a\n", "x = f()\n"]);
        document.store_check(checked("x = f(a)\n"));
        assert_eq!(document.snapshot().previous.len(), 1);
    }

    #[test]
    fn a_full_change_replaces_the_text() {
        let mut document = TextDocument::new("a = 1\n".to_string(), 1);
        document.apply_changes(
            vec![TextDocumentContentChangeEvent {
                range: None,
                range_length: None,
                text: "b = 2\n".to_string(),
            }],
            2,
            PositionEncoding::Utf16,
        );
        assert_eq!(&**document.text(), "b = 2\n");
        assert_eq!(document.version(), 2);
    }
}
