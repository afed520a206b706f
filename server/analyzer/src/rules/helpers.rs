//! Predicates and edit builders shared by rules: tensor-ness of receivers, torch call matching,
//! adding imports, and message fragments.

use tree_sitter::Node;

use crate::checker::Context;
use crate::diagnostic::Edit;
use crate::semantic::ValueKind;
use crate::source::detect_line_ending;
use crate::syntax::{self, node_text};

/// Whether `expr` is a tensor for rules about methods that, on anything else, are rare:
/// a known tensor, or an unknown value in a file that imports torch. Known non-tensors
/// (NumPy arrays, scalars, containers, modules) never count.
pub fn is_probably_tensor<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    let fact = context.fact(expr);
    match fact.kind {
        ValueKind::Tensor => true,
        ValueKind::Unknown => {
            context.semantic().imports_module("torch") && !looks_like_numpy(context, expr)
        }
        _ => false,
    }
}

/// `np.float32(x)`, `arr` bound from `np.array(...)`, `x.numpy()` and similar.
pub fn looks_like_numpy<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    if context.fact(expr).kind == ValueKind::NumpyArray {
        return true;
    }
    if expr.kind() == "call"
        && let Some(qualified) = context.semantic().call_qualified_name(expr)
    {
        return qualified.starts_with("numpy.");
    }
    false
}

/// The qualified name of a call's target when it is one of `names`.
pub fn call_matches<'a>(
    context: &Context<'_, '_>,
    call: Node<'_>,
    names: &[&'a str],
) -> Option<&'a str> {
    let qualified = context.semantic().call_qualified_name(call)?;
    names.iter().copied().find(|name| *name == qualified)
}

/// An edit that adds `import_line` (e.g. `import torch_xla`) after the file's last top-level
/// import, or `None` when the file already has that exact line.
pub fn add_import(context: &Context<'_, '_>, import_line: &str) -> Option<Edit> {
    let source = context.source();
    if source.lines().any(|line| line.trim_end() == import_line) {
        return None;
    }
    let root = context.root();
    let newline = detect_line_ending(source);
    let mut cursor = root.walk();
    let mut insert_after: Option<Node<'_>> = None;
    for statement in root.named_children(&mut cursor) {
        match statement.kind() {
            "import_statement" | "import_from_statement" | "future_import_statement" => {
                insert_after = Some(statement)
            }
            "comment" => {}
            "expression_statement" if insert_after.is_none() => {
                // A module docstring stays first.
                if statement
                    .named_child(0)
                    .is_some_and(|n| n.kind() == "string")
                {
                    insert_after = Some(statement);
                } else {
                    break;
                }
            }
            _ => break,
        }
    }
    match insert_after {
        Some(statement) => {
            // Insert at the end of the statement's line.
            let end = statement.end_byte();
            let line_end = source[end..]
                .find(['\n', '\r'])
                .map_or(source.len(), |i| end + i);
            Some(Edit::insert(line_end, format!("{newline}{import_line}")))
        }
        None => Some(Edit::insert(0, format!("{import_line}{newline}"))),
    }
}

/// " in the training loop" / " in `forward`" — appended to messages on hot paths.
pub fn hot_path_suffix(context: &Context<'_, '_>) -> String {
    context
        .hot_path()
        .map(|hot| format!(" {}", hot.describe()))
        .unwrap_or_default()
}

/// Whether `node` is the condition of a `... if torch.cuda.is_available() else ...` choice.
pub fn in_cuda_availability_choice<'t>(context: &Context<'t, '_>, node: Node<'t>) -> bool {
    let Some(parent) = context.parent(node) else {
        return false;
    };
    if parent.kind() != "conditional_expression" {
        return false;
    }
    node_text(parent, context.source()).contains("cuda.is_available")
}

/// The call's argument list, when `node` is a call.
pub fn arguments<'t>(node: Node<'t>) -> Option<Node<'t>> {
    syntax::call_parts(node).map(|(_, arguments)| arguments)
}

/// Source text for a message: its first line, at most 40 characters.
pub fn short_code(text: &str) -> String {
    let first_line = text.lines().next().unwrap_or("");
    if first_line.chars().count() > 40 || text.contains('\n') {
        let truncated: String = first_line.chars().take(37).collect();
        format!("{truncated}...")
    } else {
        first_line.to_string()
    }
}
