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

/// Whether `node` only runs when a CUDA device is present, or only when no TPU is: it sits
/// - under an `if` / `elif` / `while` / conditional expression whose condition asks about CUDA
///   (`torch.cuda.is_available()`, `x.is_cuda`, `device.type == "cuda"`, an NCCL backend), or in
///   its `else` branch (the author already chose per device);
/// - in a later branch of an `if` chain whose earlier condition handles a TPU (`is_torch_xla_available()`);
/// - on the right of `cuda_check and …`;
/// - after an early `if not torch.cuda.is_available(): return` in an enclosing block;
/// - in a function or class whose name or decorators say it is CUDA-specific
///   (`@unittest.skipIf(not torch.cuda.is_available(), ...)`, `@require_torch_gpu`).
pub fn guarded_by_cuda_check<'t>(context: &Context<'t, '_>, node: Node<'t>) -> bool {
    let source = context.source();
    let mut child = node;
    let mut current = context.parent(node);
    while let Some(parent) = current {
        match parent.kind_name() {
            "if_statement" | "elif_clause" | "while_statement" => {
                if let Some(condition) = parent.field("condition")
                    && condition.id() != child.id()
                    && mentions_cuda(node_text(condition, source))
                {
                    return true;
                }
                if parent.kind_name() == "elif_clause"
                    && let Some(if_statement) = context.parent(parent)
                    && earlier_conditions_mention(if_statement, parent, source)
                {
                    return true;
                }
            }
            "conditional_expression" => {
                if let Some(condition) = parent.named_child(1)
                    && condition.id() != child.id()
                    && mentions_cuda(node_text(condition, source))
                {
                    return true;
                }
            }
            "boolean_operator" => {
                if let Some(left) = parent.field("left")
                    && left.id() != child.id()
                    && mentions_cuda(node_text(left, source))
                {
                    return true;
                }
            }
            "else_clause" => {
                if let Some(if_statement) = context.parent(parent)
                    && if_statement.kind_name() == "if_statement"
                    && earlier_conditions_mention(if_statement, parent, source)
                {
                    return true;
                }
            }
            "block" | "module" if follows_early_exit_on_cuda_check(parent, child, source) => {
                return true;
            }
            "function_definition" | "class_definition" => {
                let name = parent
                    .field("name")
                    .map(|n| node_text(n, source))
                    .unwrap_or("");
                if name.to_ascii_lowercase().contains("cuda") {
                    return true;
                }
                // `@unittest.skipIf(not torch.cuda.is_available(), ...)`, `@require_torch_gpu`.
                if let Some(decorated) = context
                    .parent(parent)
                    .filter(|p| p.kind_name() == "decorated_definition")
                {
                    let mut cursor = decorated.walk();
                    let cuda_decorator = decorated
                        .named_children(&mut cursor)
                        .filter(|c| c.kind_name() == "decorator")
                        .any(|d| mentions_cuda(node_text(d, source)));
                    if cuda_decorator {
                        return true;
                    }
                }
            }
            _ => {}
        }
        child = parent;
        current = context.parent(parent);
    }
    false
}

/// Whether a condition of `if_statement` before `branch` asks about CUDA or handles a TPU.
fn earlier_conditions_mention(if_statement: Node<'_>, branch: Node<'_>, source: &str) -> bool {
    let mut cursor = if_statement.walk();
    let mut conditions = vec![if_statement.field("condition")];
    for clause in if_statement.named_children(&mut cursor) {
        if clause.id() == branch.id() {
            break;
        }
        if clause.kind_name() == "elif_clause" {
            conditions.push(clause.field("condition"));
        }
    }
    conditions.into_iter().flatten().any(|condition| {
        let text = node_text(condition, source);
        mentions_cuda(text) || mentions_tpu(text)
    })
}

/// `if not torch.cuda.is_available(): return` (or `raise`) earlier in the same block.
/// How many leading statements of a block may hold an early-exit guard.
const EARLY_EXIT_WINDOW: usize = 16;

fn follows_early_exit_on_cuda_check(block: Node<'_>, child: Node<'_>, source: &str) -> bool {
    let mut cursor = block.walk();
    // Guard clauses open their block; scanning only the first statements keeps this constant per
    // call (scanning every earlier sibling made a check of a large flat module quadratic).
    for statement in block.named_children(&mut cursor).take(EARLY_EXIT_WINDOW) {
        if statement.id() == child.id() || statement.start_byte() >= child.start_byte() {
            return false;
        }
        if statement.kind_name() != "if_statement" {
            continue;
        }
        let Some(condition) = statement.field("condition") else {
            continue;
        };
        if !mentions_cuda(node_text(condition, source)) {
            continue;
        }
        let exits = statement
            .field("consequence")
            .and_then(|body| {
                let mut body_cursor = body.walk();
                body.named_children(&mut body_cursor)
                    .filter(|s| s.kind_name() != "comment")
                    .last()
            })
            .is_some_and(|last| {
                matches!(
                    last.kind_name(),
                    "return_statement" | "raise_statement" | "continue_statement"
                )
            });
        if exits {
            return true;
        }
    }
    false
}

fn mentions_cuda(condition: &str) -> bool {
    ["cuda", "CUDA", "gpu", "GPU", "nccl", "NCCL"]
        .iter()
        .any(|word| condition.contains(word))
}

fn mentions_tpu(condition: &str) -> bool {
    ["xla", "XLA", "tpu", "TPU"]
        .iter()
        .any(|word| condition.contains(word))
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
