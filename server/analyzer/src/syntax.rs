//! Thin, panic-free helpers over tree-sitter-python nodes: parsing, node text, calls, arguments, literals.
//!
//! Node-kind strings of the Python grammar live here and in `semantic.rs`; rules use these helpers
//! rather than walking raw children, so a grammar upgrade touches few places.

use std::borrow::Cow;
use std::ops::Deref;
use std::sync::LazyLock;

use tree_sitter::{Language, Node, Parser, Tree};

/// The pinned Python grammar; dereferences to a [`Language`].
pub static PYTHON: PythonGrammar = PythonGrammar;

/// Handle on the Python grammar. tree-sitter does not implement `Sync` for `Language` on wasm32,
/// so a `LazyLock<Language>` static does not compile there; each thread instead keeps its own
/// `Language` (a pointer to the grammar's static tables), made on first use and kept for the
/// thread's life.
pub struct PythonGrammar;

impl Deref for PythonGrammar {
    type Target = Language;

    fn deref(&self) -> &Language {
        thread_local! {
            static LANGUAGE: &'static Language =
                Box::leak(Box::new(tree_sitter_python::LANGUAGE.into()));
        }
        LANGUAGE.with(|language| *language)
    }
}

/// Field names the engine looks up, resolved to the grammar's field ids once.
const FIELD_NAMES: &[&str] = &[
    "value",
    "attribute",
    "name",
    "right",
    "left",
    "object",
    "function",
    "argument",
    "condition",
    "body",
    "operator",
    "type",
    "parameters",
    "module_name",
    "key",
    "alias",
    "superclasses",
    "expression",
    "definition",
    "consequence",
    "arguments",
    "alternative",
    "subscript",
    "return_type",
];

static FIELD_IDS: LazyLock<Vec<u16>> = LazyLock::new(|| {
    FIELD_NAMES
        .iter()
        .map(|name| PYTHON.field_id_for_name(name).map_or(0, |id| id.get()))
        .collect()
});

/// Field access by name without tree-sitter's per-call search of the field table.
///
/// `Node::child_by_field_name` resolves the name with a `strncmp` over every field of the
/// grammar on each call; profiling a full check of diffusers showed that lookup alone at ~30%
/// of the time. Known names map to cached ids here; others fall back to the slow path.
pub trait FieldExt<'t> {
    fn field(&self, name: &str) -> Option<Node<'t>>;
}

impl<'t> FieldExt<'t> for Node<'t> {
    #[inline]
    fn field(&self, name: &str) -> Option<Node<'t>> {
        match FIELD_NAMES.iter().position(|known| *known == name) {
            Some(index) => match FIELD_IDS[index] {
                0 => None,
                id => self.child_by_field_id(id),
            },
            None => self.child_by_field_name(name),
        }
    }
}

/// How deep recursive helpers (expression facts, chains) may go before giving up.
pub const MAX_EXPR_DEPTH: usize = 48;

/// Parses `text`. Parsing never fails in practice; `None` only if tree-sitter refuses the language.
pub fn parse(text: &str, old_tree: Option<&Tree>) -> Option<Tree> {
    let mut parser = Parser::new();
    parser.set_language(&PYTHON).ok()?;
    parser.parse(text, old_tree)
}

/// Source text of `node`; empty when the range is not on char boundaries.
pub fn node_text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or("")
}

/// `(function, argument_list)` of a `call` node.
pub fn call_parts<'t>(call: Node<'t>) -> Option<(Node<'t>, Node<'t>)> {
    if call.kind() != "call" {
        return None;
    }
    let function = call.field("function")?;
    let arguments = call.field("arguments")?;
    Some((function, arguments))
}

/// For `recv.method(...)`: `(recv, method name node)`.
pub fn method_call<'t>(call: Node<'t>) -> Option<(Node<'t>, Node<'t>)> {
    let (function, _) = call_parts(call)?;
    if function.kind() != "attribute" {
        return None;
    }
    Some((function.field("object")?, function.field("attribute")?))
}

/// Name of the called method or function: `c` in `a.b.c(...)`, `f` in `f(...)`.
pub fn callee_name<'s>(call: Node<'_>, source: &'s str) -> Option<&'s str> {
    let (function, _) = call_parts(call)?;
    match function.kind() {
        "identifier" => Some(node_text(function, source)),
        "attribute" => Some(node_text(function.field("attribute")?, source)),
        _ => None,
    }
}

/// Positional arguments of an `argument_list` (skipping keywords, `*args`, `**kwargs` and comments).
pub fn positional_args<'t>(arguments: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = arguments.walk();
    arguments
        .named_children(&mut cursor)
        .filter(|child| {
            !matches!(
                child.kind(),
                "keyword_argument" | "list_splat" | "dictionary_splat" | "comment"
            )
        })
        .collect()
}

/// Whether the argument list has `*args` or `**kwargs`, which may carry any keyword.
pub fn has_splat(arguments: Node<'_>) -> bool {
    let mut cursor = arguments.walk();
    arguments
        .named_children(&mut cursor)
        .any(|child| matches!(child.kind(), "list_splat" | "dictionary_splat"))
}

/// The `keyword_argument` node named `name` in an `argument_list`.
pub fn keyword_arg_node<'t>(arguments: Node<'t>, name: &str, source: &str) -> Option<Node<'t>> {
    let mut cursor = arguments.walk();
    arguments
        .named_children(&mut cursor)
        .filter(|child| child.kind() == "keyword_argument")
        .find(|child| {
            child
                .field("name")
                .is_some_and(|n| node_text(n, source) == name)
        })
}

/// The value of keyword argument `name` in an `argument_list`.
pub fn keyword_arg<'t>(arguments: Node<'t>, name: &str, source: &str) -> Option<Node<'t>> {
    keyword_arg_node(arguments, name, source)?.field("value")
}

/// The argument at `position`, or the keyword argument `name`: how Python binds a parameter.
pub fn argument<'t>(
    arguments: Node<'t>,
    position: usize,
    name: &str,
    source: &str,
) -> Option<Node<'t>> {
    keyword_arg(arguments, name, source)
        .or_else(|| positional_args(arguments).get(position).copied())
}

/// The value of a plain string literal (no f-string interpolation, no implicit concatenation).
pub fn string_value<'s>(node: Node<'_>, source: &'s str) -> Option<Cow<'s, str>> {
    if node.kind() != "string" {
        return None;
    }
    let mut cursor = node.walk();
    let mut content = None;
    for child in node.named_children(&mut cursor) {
        match child.kind() {
            "string_start" | "string_end" => {}
            "string_content" if content.is_none() => content = Some(child),
            _ => return None,
        }
    }
    let start = node.child(0)?;
    let prefix = node_text(start, source);
    if prefix.to_ascii_lowercase().contains('f') || prefix.to_ascii_lowercase().contains('b') {
        return None;
    }
    Some(match content {
        Some(content) => Cow::Borrowed(node_text(content, source)),
        None => Cow::Borrowed(""),
    })
}

/// `["a", "b", "c"]` for the expression `a.b.c`; `None` for anything but identifiers and attributes.
pub fn dotted_parts<'s>(node: Node<'_>, source: &'s str) -> Option<Vec<&'s str>> {
    let mut parts = Vec::new();
    let mut current = node;
    for _ in 0..MAX_EXPR_DEPTH {
        match current.kind() {
            "identifier" => {
                parts.push(node_text(current, source));
                parts.reverse();
                return Some(parts);
            }
            "attribute" => {
                parts.push(node_text(current.field("attribute")?, source));
                current = current.field("object")?;
            }
            _ => return None,
        }
    }
    None
}

/// Strips any number of enclosing parentheses.
pub fn unparenthesize(mut node: Node<'_>) -> Node<'_> {
    for _ in 0..MAX_EXPR_DEPTH {
        if node.kind() != "parenthesized_expression" {
            break;
        }
        match node.named_child(0) {
            Some(inner) if inner.kind() != "comment" => node = inner,
            _ => break,
        }
    }
    node
}

/// Whether `node` or any descendant is a syntax error or a missing token.
pub fn has_error(node: Node<'_>) -> bool {
    node.has_error()
}

/// Whether the file's `python`-level boolean literal / None.
pub fn is_literal_constant(node: Node<'_>) -> bool {
    matches!(
        node.kind(),
        "true" | "false" | "none" | "integer" | "float" | "string" | "concatenated_string"
    )
}

/// Numeric value of an integer literal like `128`, `0x80` or `1_024`.
pub fn integer_value(node: Node<'_>, source: &str) -> Option<i64> {
    if node.kind() != "integer" {
        return None;
    }
    let text = node_text(node, source).replace('_', "");
    let lower = text.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()
    } else if let Some(oct) = lower.strip_prefix("0o") {
        i64::from_str_radix(oct, 8).ok()
    } else if let Some(bin) = lower.strip_prefix("0b") {
        i64::from_str_radix(bin, 2).ok()
    } else {
        lower.parse().ok()
    }
}

/// Indentation (leading spaces/tabs) of the line containing `offset`.
pub fn line_indent(source: &str, offset: usize) -> &str {
    let offset = crate::source::floor_char_boundary(source, offset);
    let line_start = source[..offset].rfind(['\n', '\r']).map_or(0, |i| i + 1);
    let rest = &source[line_start..];
    let indent_len = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    &rest[..indent_len]
}
