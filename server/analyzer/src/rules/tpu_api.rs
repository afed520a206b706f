//! Backend-aware building blocks for the device, idiom and distributed rules: the TPU device
//! expression of the file's backend (named through the importer), and guards such as "this line
//! only runs when CUDA is available".

use tree_sitter::Node;

use crate::checker::Context;
pub use crate::fix::edits::insert_argument;
use crate::fix::importer::{ImportedName, Importer};
use crate::semantic::Backend;
use crate::syntax::NodeExt;
use crate::syntax::{self, node_text};

/// Source text that names the TPU device of the file's backend at `site`, with the import it
/// needs there ([`Importer`]). `None` when the backend is unknown: the rule then cannot write a
/// fix.
pub fn device_expression<'t>(context: &Context<'t, '_>, site: Node<'t>) -> Option<ImportedName> {
    match context.backend() {
        Backend::TorchXla => {
            let mut device = torch_xla_expression(context, site, "device");
            device.expression.push_str("()");
            Some(device)
        }
        Backend::TorchTpu => {
            let mut torch = Importer::new(context, site).module("torch", None);
            torch.expression = format!("{}.device(\"tpu\")", torch.expression);
            Some(torch)
        }
        Backend::Unknown => None,
    }
}

/// For a file whose backend is unknown: TorchTPU's device, `torch.device("tpu")`, for a
/// display-only suggestion whose title also names PyTorch/XLA's ([`OTHER_BACKEND_DEVICE`]).
/// Never `torch.accelerator.current_accelerator()`: it returns `None` under PyTorch/XLA, and
/// `torch.device(torch.accelerator.current_accelerator(), i)` is a `TypeError`.
pub fn suggested_device_expression<'t>(context: &Context<'t, '_>, site: Node<'t>) -> ImportedName {
    let mut torch = Importer::new(context, site).module("torch", None);
    torch.expression = format!("{}.device(\"tpu\")", torch.expression);
    torch
}

/// How the title of a display-only device suggestion names PyTorch/XLA's spelling.
pub const OTHER_BACKEND_DEVICE: &str = "TorchTPU; `torch_xla.device()` with PyTorch/XLA";

/// `torch_xla.<member>` written with the file's own name for the `torch_xla` package at `site`,
/// adding `import torch_xla` where it will run when no name refers to it.
pub fn torch_xla_expression<'t>(
    context: &Context<'t, '_>,
    site: Node<'t>,
    member: &str,
) -> ImportedName {
    Importer::new(context, site).member("torch_xla", member, None)
}

/// `xm.<member>` with the file's name for `torch_xla.core.xla_model` at `site`, adding
/// `import torch_xla.core.xla_model as xm` where it will run when no name refers to it.
pub fn xla_model_expression<'t>(
    context: &Context<'t, '_>,
    site: Node<'t>,
    member: &str,
) -> ImportedName {
    Importer::new(context, site).member("torch_xla.core.xla_model", member, Some("xm"))
}

/// Whether a top-level, unconditional import brings in `package` (`import torch_xla...`,
/// `from torch_xla... import ...`). Files that import a backend only under
/// `if is_torch_xla_available():` serve several devices, and backend-specific advice about
/// their generic code is usually wrong.
pub fn imports_unconditionally(context: &Context<'_, '_>, package: &str) -> bool {
    context.semantic().top_level_imports().iter().any(|text| {
        text.split([',', ' ', '\n', '\t'])
            .filter(|word| !word.is_empty())
            .any(|word| {
                word.strip_prefix(package)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
            })
    })
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
