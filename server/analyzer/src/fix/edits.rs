//! Edit builders shared by rules: adding and removing call arguments, and inserting a statement
//! on a line of its own after another one (the importer places imports with it).

use crate::kind;
use tree_sitter::Node;

use crate::diagnostic::Edit;
use crate::source::detect_line_ending;
use crate::syntax::{self, NodeExt};

/// An edit inserting `keyword=value` text as the last argument of `arguments`.
pub fn insert_argument(arguments: Node<'_>, text: &str) -> Edit {
    let mut last = None;
    for child in syntax::named_children(arguments) {
        if child.is_not(kind::COMMENT) {
            last = Some(child);
        }
    }
    match last {
        Some(last) => Edit::insert(last.end_byte(), format!(", {text}")),
        None => {
            // `f()`: insert right after the opening parenthesis.
            Edit::insert(arguments.start_byte() + 1, text.to_string())
        }
    }
}

/// An edit deleting one argument together with the comma that separates it from its neighbour.
pub fn remove_argument(source: &str, arguments: Node<'_>, argument: Node<'_>) -> Edit {
    let mut children = syntax::named_children(arguments);
    children.retain(|child| child.is_not(kind::COMMENT));
    let position = children
        .iter()
        .position(|child| child.id() == argument.id());
    match position {
        Some(index) if index > 0 => {
            Edit::delete(children[index - 1].end_byte()..argument.end_byte())
        }
        Some(0) if children.len() > 1 => {
            Edit::delete(argument.start_byte()..children[1].start_byte())
        }
        _ => {
            // The only argument: delete it and a trailing comma if there is one.
            let mut end = argument.end_byte();
            let rest = &source[end.min(source.len())..arguments.end_byte().min(source.len())];
            let trimmed = rest.trim_start();
            if trimmed.starts_with(',') {
                end += rest.len() - trimmed.len() + 1;
            }
            Edit::delete(argument.start_byte()..end)
        }
    }
}

/// An edit putting `line` on a new line right after the line on which `statement` ends, with
/// the indentation of the line on which it starts (so the new line lands in the same block).
/// `None` when `statement` does not start its line (`if ok: import x`, `a = 1; import x`): a new
/// line there would leave the block.
pub fn insert_line_after(source: &str, statement: Node<'_>, line: &str) -> Option<Edit> {
    let start = statement.start_byte().min(source.len());
    let line_start = source[..start].rfind(['\n', '\r']).map_or(0, |i| i + 1);
    if !source[line_start..start]
        .chars()
        .all(|c| c == ' ' || c == '\t')
    {
        return None;
    }
    let indent = syntax::line_indent(source, start);
    let end = statement.end_byte().min(source.len());
    let line_end = source[end..]
        .find(['\n', '\r'])
        .map_or(source.len(), |i| end + i);
    let newline = detect_line_ending(source);
    Some(Edit::insert(line_end, format!("{newline}{indent}{line}")))
}

/// An edit adding `line` (an import) at module level: after the file's leading imports, or
/// after its docstring, or at the very top.
pub fn insert_module_import(source: &str, root: Node<'_>, line: &str) -> Edit {
    let mut insert_after: Option<Node<'_>> = None;
    for statement in root.named_nodes() {
        match statement.kind_key() {
            kind::IMPORT_STATEMENT
            | kind::IMPORT_FROM_STATEMENT
            | kind::FUTURE_IMPORT_STATEMENT => insert_after = Some(statement),
            kind::COMMENT => {}
            kind::EXPRESSION_STATEMENT if insert_after.is_none() => {
                // A module docstring stays first.
                if statement.named_child(0).is_some_and(|n| n.is(kind::STRING)) {
                    insert_after = Some(statement);
                } else {
                    break;
                }
            }
            _ => break,
        }
    }
    let newline = detect_line_ending(source);
    match insert_after.and_then(|statement| insert_line_after(source, statement, line)) {
        Some(edit) => edit,
        None => Edit::insert(0, format!("{line}{newline}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax;

    fn apply(source: &str, edit: &Edit) -> String {
        let mut output = source.to_string();
        output.replace_range(edit.range.clone(), &edit.content);
        output
    }

    /// The first statement of kind `kind` anywhere in `source`'s tree.
    fn first<'t>(tree: &'t tree_sitter::Tree, kind: &str) -> Node<'t> {
        let mut stack = vec![tree.root_node()];
        while let Some(node) = stack.pop() {
            if node.kind_name() == kind {
                return node;
            }
            let children: Vec<Node<'t>> = node.named_nodes().collect();
            stack.extend(children.into_iter().rev());
        }
        panic!("no {kind}");
    }

    #[test]
    fn a_line_after_a_statement_keeps_its_block_and_line_ending() {
        let source = "if ok:\r\n    import a  # note\r\nx = 1\r\n";
        let tree = syntax::parse(source, None).expect("parses");
        let edit = insert_line_after(source, first(&tree, "import_statement"), "import b")
            .expect("starts its line");
        assert_eq!(
            apply(source, &edit),
            "if ok:\r\n    import a  # note\r\n    import b\r\nx = 1\r\n"
        );
    }

    #[test]
    fn no_line_after_a_statement_that_shares_its_line() {
        let source = "if ok: import a\n";
        let tree = syntax::parse(source, None).expect("parses");
        assert!(insert_line_after(source, first(&tree, "import_statement"), "import b").is_none());
    }

    #[test]
    fn module_imports_go_after_the_docstring_and_leading_imports() {
        let source = "\"\"\"Doc.\"\"\"\nfrom __future__ import annotations\nimport os\n\nx = 1\n";
        let tree = syntax::parse(source, None).expect("parses");
        let edit = insert_module_import(source, tree.root_node(), "import torch");
        assert_eq!(
            apply(source, &edit),
            "\"\"\"Doc.\"\"\"\nfrom __future__ import annotations\nimport os\nimport torch\n\nx = 1\n"
        );
        let bare = "x = 1";
        let tree = syntax::parse(bare, None).expect("parses");
        let edit = insert_module_import(bare, tree.root_node(), "import torch");
        assert_eq!(apply(bare, &edit), "import torch\nx = 1");
    }

    #[test]
    fn removing_arguments_takes_their_comma() {
        let source = "f(a, b=1, c=2)\ng(only,)\n";
        let tree = syntax::parse(source, None).expect("parses");
        let arguments = first(&tree, "argument_list");
        let keyword = first(&tree, "keyword_argument");
        assert_eq!(
            apply(source, &remove_argument(source, arguments, keyword)),
            "f(a, c=2)\ng(only,)\n"
        );
        assert_eq!(
            apply(source, &insert_argument(arguments, "d=2")),
            "f(a, b=1, c=2, d=2)\ng(only,)\n"
        );
    }
}
