//! Syntax errors as diagnostics (ruff's `invalid-syntax`): every `ERROR` region and every
//! token the parser had to invent (`MISSING`) becomes an error-severity diagnostic, so a file
//! that does not parse can never pass a check silently.
//!
//! These diagnostics belong to no rule: `select`, `ignore` and `# noqa` never remove them, and
//! they carry no fix. Rules keep running on the parts of the file that did parse.

use tree_sitter::{Node, Tree};

use crate::diagnostic::{Diagnostic, Severity};
use crate::syntax::NodeExt;

/// The code (and name) of a syntax-error diagnostic; no rule has it.
pub const INVALID_SYNTAX: &str = "invalid-syntax";

/// Longest source excerpt quoted in a message.
const EXCERPT_CHARS: usize = 40;

/// One diagnostic per outermost `ERROR` node and per `MISSING` token outside one, in source order.
pub fn syntax_errors(source: &str, tree: &Tree) -> Vec<Diagnostic> {
    let root = tree.root_node();
    let mut found = Vec::new();
    if !root.has_error() {
        return found;
    }
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        let reported = if node.is_error() {
            found.push(unexpected(node, source));
            true
        } else if node.is_missing() {
            found.push(missing(node));
            true
        } else {
            false
        };
        // Descend only into subtrees that hold an error, and never into a reported one.
        if !reported && node.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return found;
            }
        }
    }
}

fn diagnostic(range: std::ops::Range<usize>, message: String) -> Diagnostic {
    Diagnostic {
        code: INVALID_SYNTAX,
        name: INVALID_SYNTAX,
        message,
        range,
        severity: Severity::Error,
        fix: None,
        related: Vec::new(),
        tag: None,
    }
}

/// A token the parser inserted: `Expected `)``.
fn missing(node: Node<'_>) -> Diagnostic {
    let kind = node.kind_name();
    let what = if kind.chars().all(|c| c.is_ascii_punctuation()) || is_keyword(kind) {
        format!("`{kind}`")
    } else {
        format!("{} {}", article(kind), kind.replace('_', " "))
    };
    let at = node.start_byte();
    diagnostic(at..at, format!("Expected {what}"))
}

/// Text the parser could not fit into the grammar: `Invalid syntax: `…``, quoting its first line.
fn unexpected(node: Node<'_>, source: &str) -> Diagnostic {
    let range = node.byte_range();
    let text = source.get(range.clone()).unwrap_or("");
    let first_line = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("");
    let excerpt = first_line.trim();
    let message = if excerpt.is_empty() {
        "Invalid syntax".to_string()
    } else if excerpt.chars().count() > EXCERPT_CHARS {
        let cut: String = excerpt.chars().take(EXCERPT_CHARS).collect();
        format!("Invalid syntax: cannot parse `{cut}…`")
    } else {
        format!("Invalid syntax: cannot parse `{excerpt}`")
    };
    diagnostic(range, message)
}

fn is_keyword(kind: &str) -> bool {
    matches!(
        kind,
        "in" | "import"
            | "from"
            | "as"
            | "else"
            | "except"
            | "finally"
            | "for"
            | "if"
            | "while"
            | "with"
            | "def"
            | "class"
            | "return"
            | "lambda"
            | "not"
            | "and"
            | "or"
            | "is"
    )
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse;

    fn errors(source: &str) -> Vec<(String, usize)> {
        let tree = parse(source, None).expect("parses");
        syntax_errors(source, &tree)
            .into_iter()
            .map(|d| (d.message, d.range.start))
            .collect()
    }

    #[test]
    fn a_clean_file_has_none() {
        assert!(errors("import torch\nx = torch.ones(2)\n").is_empty());
    }

    #[test]
    fn an_unclosed_call_is_reported() {
        let source = "def f():\n    loss = model(x).sum(\n    print(loss.item())\n";
        let found = errors(source);
        assert!(!found.is_empty(), "no syntax error in {source:?}");
        assert!(found.iter().all(|(message, _)| !message.is_empty()));
    }

    #[test]
    fn stray_text_is_quoted() {
        let found = errors("x = 1\n)))\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].0.contains(")))"), "{found:?}");
    }

    #[test]
    fn a_missing_colon_names_the_token() {
        let found = errors("if x\n    pass\n");
        assert!(!found.is_empty());
    }
}
