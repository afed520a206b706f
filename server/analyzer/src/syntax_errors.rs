//! Syntax errors as diagnostics (ruff's `invalid-syntax`): every `ERROR` region and every
//! token the parser had to invent (`MISSING`) becomes an error-severity diagnostic, so a file
//! that does not parse can never pass a check silently.
//!
//! These diagnostics belong to no rule: `select`, `ignore` and `# noqa` never remove them, and
//! they carry no fix. Rules keep running on the parts of the file that did parse.

use tree_sitter::{Node, Tree};

use crate::diagnostic::{Diagnostic, Severity};
use crate::kind;
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
            if !parses_when_parenthesized(node, source)
                && !continues_a_subscripted_annotation(node, source)
            {
                found.push(unexpected(node, source));
            }
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

/// tree-sitter-python rejects some valid tuples with starred items when they are not in
/// parentheses (`return *[None] * 3, *xs`, `host, *rest = endpoint, *[]`; found in PyTorch's own
/// sources); parenthesized, they parse. An error region whose `return` or assignment parses once
/// its value is parenthesized is valid Python, not a syntax error: reporting it would fail a
/// check of correct code.
fn parses_when_parenthesized(node: Node<'_>, source: &str) -> bool {
    let region = source.get(node.byte_range()).unwrap_or("");
    if !region.contains('*') {
        return false;
    }
    let start = source[..node.start_byte()]
        .rfind('\n')
        .map_or(0, |at| at + 1);
    let end = source[node.end_byte()..]
        .find('\n')
        .map_or(source.len(), |at| node.end_byte() + at);
    let statement = source[start..end].trim();
    let candidate = if let Some(value) = statement.strip_prefix("return ") {
        format!("return (\n{value}\n)\n")
    } else if let Some(at) = statement.find(" = ") {
        format!("{} = (\n{}\n)\n", &statement[..at], &statement[at + 3..])
    } else {
        return false;
    };
    crate::syntax::parse(&candidate, None).is_some_and(|tree| !tree.root_node().has_error())
}

/// tree-sitter-python reads an annotation that starts with a subscript as a generic type, which
/// no `or` or `and` may follow, so a valid boolean annotation that starts with one is an error
/// region right after the type (`target_size: Tuple[int, int] or int`, in mmocr; `x: T[int] and
/// U = v`). An error region that directly follows an annotation and, joined to it and
/// parenthesized, parses as one annotation is valid Python, not a syntax error.
fn continues_a_subscripted_annotation(node: Node<'_>, source: &str) -> bool {
    // The annotation is the error's previous sibling (an assignment's or a defaulted parameter's
    // `type`) or the last child of the previous sibling (a plain typed parameter's `type`).
    let Some(before) = node.prev_named_sibling() else {
        return false;
    };
    let annotation = if before.is(kind::TYPE) {
        Some(before)
    } else if before.is(kind::TYPED_PARAMETER) {
        before.field("type")
    } else {
        None
    };
    let Some(annotation) = annotation.filter(|a| a.end_byte() == before.end_byte()) else {
        return false;
    };
    let holds_a_subscript = {
        let mut cursor = annotation.walk();
        annotation
            .named_children(&mut cursor)
            .any(|child| child.is(kind::GENERIC_TYPE))
    };
    if !holds_a_subscript {
        return false;
    }
    let Some(joined) = source.get(annotation.start_byte()..node.end_byte()) else {
        return false;
    };
    let candidate = format!("x: (\n{joined}\n)\n");
    crate::syntax::parse(&candidate, None).is_some_and(|tree| !tree.root_node().has_error())
}

/// Text the parser could not fit into the grammar. The two most common causes are named where
/// they are: a bracket that is never closed, and a block header without its colon; otherwise
/// `Invalid syntax: cannot parse `…``, quoting the region's first line.
fn unexpected(node: Node<'_>, source: &str) -> Diagnostic {
    let range = node.byte_range();
    let text = source.get(range.clone()).unwrap_or("");
    if let Some(offset) = unclosed_bracket(text) {
        let at = range.start + offset;
        let bracket = &text[offset..offset + 1];
        return diagnostic(at..at + 1, format!("`{bracket}` is never closed"));
    }
    let first_line = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("");
    let excerpt = first_line.trim();
    if let Some(keyword) = header_keyword(excerpt)
        && !excerpt.ends_with(':')
    {
        let line_start = range.start + text.find(first_line).unwrap_or(0);
        let at = line_start + first_line.trim_end().len();
        return diagnostic(
            at..at,
            format!("Expected `:` at the end of the `{keyword}` line"),
        );
    }
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

/// The offset of the first opening bracket of `text` that no closing bracket matches, skipping
/// strings ([`crate::syntax::string_end`]) and comments (`#` ends the line).
fn unclosed_bracket(text: &str) -> Option<usize> {
    let mut open: Vec<(u8, usize)> = Vec::new();
    let bytes = text.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'"' | b'\'' => {
                index = crate::syntax::string_end(bytes, index);
                continue;
            }
            b'#' => {
                let rest = &bytes[index..];
                index += rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len());
            }
            opener @ (b'(' | b'[' | b'{') => open.push((opener, index)),
            closer @ (b')' | b']' | b'}') => {
                let wanted = match closer {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                match open.last() {
                    Some((last, _)) if *last == wanted => {
                        open.pop();
                    }
                    // A stray closer: not the unclosed-bracket case.
                    _ => return None,
                }
            }
            _ => {}
        }
        index += 1;
    }
    open.first().map(|(_, offset)| *offset)
}

/// The keyword of a block header (`if x`, `def f()`, `class A`), if `line` starts with one.
fn header_keyword(line: &str) -> Option<&'static str> {
    const HEADERS: [&str; 11] = [
        "if", "elif", "else", "for", "while", "def", "class", "with", "try", "except", "finally",
    ];
    HEADERS.into_iter().find(|keyword| {
        line.strip_prefix(keyword)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '(', ':']))
    })
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
    fn an_unclosed_call_is_reported_at_its_bracket() {
        let source = "def f():\n    loss = model(x).sum(\n    print(loss.item())\n";
        let found = errors(source);
        let at = source.find("sum(").unwrap() + 3;
        assert_eq!(found, [("`(` is never closed".to_string(), at)]);
    }

    #[test]
    fn stray_text_is_quoted() {
        let found = errors("x = 1\n)))\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].0.contains(")))"), "{found:?}");
    }

    #[test]
    fn a_missing_colon_is_named() {
        let found = errors("if x\n    pass\n");
        assert_eq!(
            found,
            [("Expected `:` at the end of the `if` line".to_string(), 4)]
        );
    }

    #[test]
    fn valid_starred_tuples_the_grammar_misses_are_not_errors() {
        for source in [
            "def f(g_xs, n):\n    return *[None] * 3, *g_xs, *[None] * n\n",
            "host, *rest = endpoint, *[]  # split\n",
        ] {
            let tree = parse(source, None).expect("parses");
            assert!(
                tree.root_node().has_error(),
                "the grammar now accepts {source:?}"
            );
            assert_eq!(errors(source), [], "{source:?}");
        }
        // A real error with a star is still one.
        assert_eq!(errors("def f():\n    return *\n").len(), 1);
    }

    #[test]
    fn valid_operators_after_a_subscripted_annotation_are_not_errors() {
        for source in [
            "def f(self, target_size: Tuple[int, int] or int, ratio: float = 0.5):\n    pass\n",
            "def f(size: Tuple[int] or int = 3):\n    pass\n",
            "def f(size: List[int] and int):\n    pass\n",
            "size: Tuple[int, int] or int = 1\n",
        ] {
            let tree = parse(source, None).expect("parses");
            assert!(
                tree.root_node().has_error(),
                "the grammar now accepts {source:?}"
            );
            assert_eq!(errors(source), [], "{source:?}");
        }
        // Text after an annotation that does not continue it is still an error, as is an
        // operator with nothing after it.
        for source in [
            "def f(size: Tuple[int] int):\n    pass\n",
            "size: Tuple[int] or = 1\n",
            "def f(size: int or):\n    pass\n",
        ] {
            assert_eq!(errors(source).len(), 1, "{source:?}: {:?}", errors(source));
        }
    }

    #[test]
    fn brackets_in_strings_and_comments_do_not_count() {
        assert_eq!(unclosed_bracket("f(\"(\", '[')  # (\n"), None);
        assert_eq!(unclosed_bracket("x = [1, (2\n"), Some(4));
        assert_eq!(unclosed_bracket(")("), None);
    }
}
