//! Backend-aware building blocks for the device, idiom and distributed rules: the TPU device
//! expression of the file's backend (with the import it needs), keyword-argument edits, and
//! guards such as "this line only runs when CUDA is available".

use tree_sitter::Node;

use crate::checker::Context;
use crate::diagnostic::Edit;
use crate::rules::helpers;
use crate::semantic::Backend;
use crate::syntax::{self, node_text};

/// Source text that names the TPU device of `backend`, plus the edits (imports) it needs in this
/// file. `None` when the backend is unknown: the rule then cannot write a fix.
pub fn device_expression(context: &Context<'_, '_>) -> Option<(String, Vec<Edit>)> {
    match context.backend() {
        Backend::TorchXla => {
            let (expression, edits) = torch_xla_expression(context, "device()");
            Some((expression, edits))
        }
        Backend::TorchTpu => {
            let torch = module_alias(context, "torch").unwrap_or_else(|| "torch".to_string());
            let edits = if module_alias(context, "torch").is_none() {
                helpers::add_import(context, "import torch")
                    .into_iter()
                    .collect()
            } else {
                Vec::new()
            };
            Some((format!("{torch}.device(\"tpu\")"), edits))
        }
        Backend::Unknown => None,
    }
}

/// `torch_xla.<member>` written with the file's own name for the `torch_xla` package, adding
/// `import torch_xla` when no name refers to it.
pub fn torch_xla_expression(context: &Context<'_, '_>, member: &str) -> (String, Vec<Edit>) {
    match module_alias(context, "torch_xla") {
        Some(alias) => (format!("{alias}.{member}"), Vec::new()),
        None => (
            format!("torch_xla.{member}"),
            helpers::add_import(context, "import torch_xla")
                .into_iter()
                .collect(),
        ),
    }
}

/// `xm.<member>` with the file's name for `torch_xla.core.xla_model`, adding
/// `import torch_xla.core.xla_model as xm` when no name refers to it.
pub fn xla_model_expression(context: &Context<'_, '_>, member: &str) -> (String, Vec<Edit>) {
    match module_alias(context, "torch_xla.core.xla_model") {
        Some(alias) => (format!("{alias}.{member}"), Vec::new()),
        None => (
            format!("xm.{member}"),
            helpers::add_import(context, "import torch_xla.core.xla_model as xm")
                .into_iter()
                .collect(),
        ),
    }
}

/// The local name bound to `module` by an import (`import torch_xla` → `torch_xla`,
/// `import torch_xla.core.xla_model as xm` → `xm` for `torch_xla.core.xla_model`).
pub fn module_alias(context: &Context<'_, '_>, module: &str) -> Option<String> {
    let semantic = context.semantic();
    let last = module.rsplit('.').next().unwrap_or(module);
    let candidates = [last, module.split('.').next().unwrap_or(module), "xm"];
    for candidate in candidates {
        if semantic.import_of(candidate) == Some(module) {
            return Some(candidate.to_string());
        }
    }
    // `import torch_xla.core.xla_model` binds `torch_xla`; the dotted path then works.
    let root = module.split('.').next().unwrap_or(module);
    if module != root && semantic.import_of(root) == Some(root) {
        return Some(module.to_string());
    }
    None
}

/// An edit inserting `keyword=value` text as the last argument of `arguments`.
pub fn insert_argument(arguments: Node<'_>, text: &str) -> Edit {
    let mut cursor = arguments.walk();
    let last = arguments
        .named_children(&mut cursor)
        .filter(|child| child.kind() != "comment")
        .last();
    match last {
        Some(last) => Edit::insert(last.end_byte(), format!(", {text}")),
        None => {
            // `f()`: insert right after the opening parenthesis.
            Edit::insert(arguments.start_byte() + 1, text.to_string())
        }
    }
}

/// An edit deleting one argument together with the comma that separates it from its neighbour.
pub fn remove_argument(context: &Context<'_, '_>, arguments: Node<'_>, argument: Node<'_>) -> Edit {
    let source = context.source();
    let mut cursor = arguments.walk();
    let children: Vec<Node<'_>> = arguments
        .named_children(&mut cursor)
        .filter(|child| child.kind() != "comment")
        .collect();
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
            let rest = &source[end..arguments.end_byte().min(source.len())];
            let trimmed = rest.trim_start();
            if trimmed.starts_with(',') {
                end += rest.len() - trimmed.len() + 1;
            }
            Edit::delete(argument.start_byte()..end)
        }
    }
}

/// Whether `node` only runs when a CUDA device is present: it sits under an `if`, `elif`,
/// `while` or conditional expression whose condition asks about CUDA
/// (`torch.cuda.is_available()`, `x.is_cuda`, `device.type == "cuda"`), or in a function whose
/// name says it is CUDA-specific.
pub fn guarded_by_cuda_check(context: &Context<'_, '_>, node: Node<'_>) -> bool {
    let source = context.source();
    let mut child = node;
    let mut current = node.parent();
    while let Some(parent) = current {
        let condition = match parent.kind() {
            "if_statement" | "elif_clause" | "while_statement" => {
                parent.child_by_field_name("condition")
            }
            "conditional_expression" => parent.named_child(1),
            "function_definition" => {
                let name = parent
                    .child_by_field_name("name")
                    .map(|n| node_text(n, source))
                    .unwrap_or("");
                if name.to_ascii_lowercase().contains("cuda") {
                    return true;
                }
                None
            }
            _ => None,
        };
        if let Some(condition) = condition
            && condition.id() != child.id()
            && mentions_cuda(node_text(condition, source))
        {
            return true;
        }
        // An `else` branch of such an `if` is not guarded the same way, but it still means the
        // author already chose per device: stay quiet there too.
        if parent.kind() == "else_clause"
            && let Some(if_statement) = parent.parent()
            && let Some(condition) = if_statement.child_by_field_name("condition")
            && mentions_cuda(node_text(condition, source))
        {
            return true;
        }
        child = parent;
        current = parent.parent();
    }
    false
}

fn mentions_cuda(condition: &str) -> bool {
    condition.contains("cuda") || condition.contains("CUDA") || condition.contains("gpu")
}

/// Whether the file, anywhere, tests for a TPU backend at run time (`if XLA_AVAILABLE:`,
/// `is_torch_xla_available()`, `device.type == "xla"`): then TPU-specific calls are guarded.
pub fn node_is_in_branch_mentioning(
    context: &Context<'_, '_>,
    node: Node<'_>,
    words: &[&str],
) -> bool {
    let source = context.source();
    let mut current = node.parent();
    while let Some(parent) = current {
        if matches!(
            parent.kind(),
            "if_statement" | "elif_clause" | "conditional_expression"
        ) && let Some(condition) = if parent.kind() == "conditional_expression" {
            parent.named_child(1)
        } else {
            parent.child_by_field_name("condition")
        } {
            let text = node_text(condition, source);
            if words.iter().any(|word| text.contains(word)) {
                return true;
            }
        }
        current = parent.parent();
    }
    false
}

/// The value of a call's argument at `position` or keyword `name`, if it is a plain string.
pub fn string_argument<'t>(
    source: &str,
    arguments: Node<'t>,
    position: usize,
    name: &str,
) -> Option<(Node<'t>, String)> {
    let node = syntax::argument(arguments, position, name, source)?;
    let value = syntax::string_value(node, source)?.into_owned();
    Some((node, value))
}
