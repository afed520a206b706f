//! Backend-aware building blocks for the device, idiom and distributed rules: the TPU device
//! expression of the file's backend (with the import it needs), keyword-argument edits, and
//! guards such as "this line only runs when CUDA is available".

use tree_sitter::Node;

use crate::checker::Context;
use crate::diagnostic::Edit;
use crate::rules::helpers;
use crate::semantic::Backend;
use crate::syntax::NodeExt;
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
            add_torch_xla_import(context, "import torch_xla")
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
            add_torch_xla_import(context, "import torch_xla.core.xla_model as xm")
                .into_iter()
                .collect(),
        ),
    }
}

/// An edit adding `import_line` (a `torch_xla` import) next to the file's first existing
/// `torch_xla` import, with its indentation: when that import sits under
/// `if is_torch_xla_available():`, the new one must stay guarded too, or the file stops importing
/// on machines without PyTorch/XLA. Without any `torch_xla` import, after the top-level imports.
pub fn add_torch_xla_import(context: &Context<'_, '_>, import_line: &str) -> Option<Edit> {
    let source = context.source();
    let mut stack = vec![context.root()];
    let mut visited = 0;
    while let Some(node) = stack.pop() {
        visited += 1;
        if visited > 50_000 {
            break;
        }
        if matches!(
            node.kind_name(),
            "import_statement" | "import_from_statement"
        ) {
            let text = node_text(node, source);
            let names_torch_xla = text
                .split([' ', ',', '\n', '\t', '('])
                .any(|word| word == "torch_xla" || word.starts_with("torch_xla."));
            if names_torch_xla {
                let indent = syntax::line_indent(source, node.start_byte());
                let end = node.end_byte();
                let line_end = source[end..]
                    .find(['\n', '\r'])
                    .map_or(source.len(), |i| end + i);
                let newline = crate::source::detect_line_ending(source);
                return Some(Edit::insert(
                    line_end,
                    format!("{newline}{indent}{import_line}"),
                ));
            }
            continue;
        }
        // Visit in source order: push children reversed.
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        for child in children.into_iter().rev() {
            if matches!(
                child.kind_name(),
                "import_statement"
                    | "import_from_statement"
                    | "if_statement"
                    | "try_statement"
                    | "block"
                    | "else_clause"
                    | "elif_clause"
                    | "except_clause"
                    | "finally_clause"
                    | "with_statement"
            ) {
                stack.push(child);
            }
        }
    }
    helpers::add_import(context, import_line)
}

/// The local name bound to `module` by an import (`import torch_xla` → `torch_xla`,
/// `import torch_xla.core.xla_model as xm` → `xm` for `torch_xla.core.xla_model`).
pub fn module_alias(context: &Context<'_, '_>, module: &str) -> Option<String> {
    context.semantic().imports().local_name_for(module)
}

/// Whether a top-level, unconditional import brings in `package` (`import torch_xla...`,
/// `from torch_xla... import ...`). Files that import a backend only under
/// `if is_torch_xla_available():` serve several devices, and backend-specific advice about
/// their generic code is usually wrong.
pub fn imports_unconditionally(context: &Context<'_, '_>, package: &str) -> bool {
    context
        .semantic()
        .imports()
        .imports_unconditionally(package)
}

/// An edit inserting `keyword=value` text as the last argument of `arguments`.
pub fn insert_argument(arguments: Node<'_>, text: &str) -> Edit {
    let mut cursor = arguments.walk();
    let last = arguments
        .named_children(&mut cursor)
        .filter(|child| child.kind_name() != "comment")
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
pub fn remove_argument<'t>(
    context: &Context<'t, '_>,
    arguments: Node<'t>,
    argument: Node<'t>,
) -> Edit {
    let source = context.source();
    let mut cursor = arguments.walk();
    let children: Vec<Node<'_>> = arguments
        .named_children(&mut cursor)
        .filter(|child| child.kind_name() != "comment")
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

/// Whether `node` runs only where the author already chose per device, as the index's hardware
/// scope says ([`crate::semantic::HardwareScope`]): under a device test in either branch
/// (`if torch.cuda.is_available():`, `device.type == "cuda"`, an NCCL backend), after an early
/// `if not torch.cuda.is_available(): return`, in a branch after one that handles a TPU, in a test
/// skipped without CUDA (`@skipIf(not torch.cuda.is_available())`, `@RunIf(min_cuda_gpus=1)`,
/// `@require_torch_gpu`) or a function named for CUDA; or, within its statement, in a branch of
/// `… if <device test> else …` or on the right of `<device test> and …`.
pub fn guarded_by_cuda_check<'t>(context: &Context<'t, '_>, node: Node<'t>) -> bool {
    let scope = context.semantic().hardware_scope();
    if scope.never_on_tpu || scope.device_branch || scope.type_checking {
        return true;
    }
    let source = context.source();
    let mut child = node;
    let mut current = context.parent(node);
    while let Some(parent) = current {
        let condition = match parent.kind_name() {
            "conditional_expression" => parent.named_child(1),
            "boolean_operator" => parent.field("left"),
            "block" | "module" | "function_definition" | "class_definition" | "lambda" => {
                return false;
            }
            _ => None,
        };
        if let Some(condition) = condition
            && condition.id() != child.id()
            && crate::semantic::device_test(condition, source).is_some()
        {
            return true;
        }
        child = parent;
        current = context.parent(parent);
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
