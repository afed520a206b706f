//! TPU402: `"cuda" if torch.cuda.is_available() else "cpu"` picks the CPU on a TPU VM.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::rules::tpu_api;
use crate::semantic::{Device, device_from_str};
use crate::syntax;
use crate::syntax::{NodeExt, Visit};

declare_rule! {
    /// ## What it does
    /// Checks for a device chosen between CUDA and the CPU, such as
    /// `"cuda" if torch.cuda.is_available() else "cpu"` or
    /// `torch.device("cuda:0" if use_cuda else "cpu")`.
    ///
    /// ## Why is this bad?
    /// A TPU VM has no CUDA device, so the condition is false and the whole program silently
    /// runs on the host CPU: no error, just a run that is orders of magnitude slower. PyTorch/XLA's
    /// migration guide quotes exactly this pattern as the code to replace.
    ///
    /// ## Example
    /// ```python
    /// device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    /// model = Net().to(device)
    /// ```
    ///
    /// Use instead (PyTorch/XLA):
    /// ```python
    /// import torch_xla
    ///
    /// device = torch_xla.device()
    /// model = Net().to(device)
    /// ```
    /// With TorchTPU, `torch.device("tpu")`. (`torch.accelerator.current_accelerator()` is no
    /// substitute: it returns `None` under PyTorch/XLA.)
    ///
    /// ## Fix safety
    /// The fix replaces the choice (or the `torch.device(...)` call around it) with the device of
    /// the file's backend and adds `import torch_xla` when needed. It is unsafe: the program no
    /// longer falls back to the CPU, and a string becomes a `torch.device`. When the backend is
    /// unknown the fix is a display-only suggestion of `torch.device("tpu")` (TorchTPU) whose
    /// title names `torch_xla.device()` for PyTorch/XLA.
    ///
    /// ## Known problems
    /// An `if`/`else` statement that assigns the two strings separately is not recognised.
    /// A choice whose condition inspects a device string that already exists
    /// (`"cuda" if "cuda" in device else "cpu"`, used for `torch.autocast`) is not reported, nor
    /// is a choice written as `map_location=` of a load: the CPU branch loads into host memory,
    /// as TPU406 recommends (a device chosen into a name and passed there is still reported where
    /// it is chosen). Nor is a choice bound to a function's local that no code of the function
    /// (closures included) mentions again (a framework such as Hugging Face's `Trainer` places
    /// the model; nothing runs on the CPU because of the name). A module-level choice is
    /// reported even when the file never reads it: whether another statement reads it is not
    /// the choice's own statement's to decide (the editor re-checks only the statements an edit
    /// touches), and another module may import it.
    ///
    /// ## References
    /// - PyTorch/XLA, *Migration to XLA on TPUs — Device handling* (https://github.com/pytorch/xla/blob/master/docs/source/learn/migration-to-xla-on-tpus.md)
    /// - TorchTPU `docs/notebooks/api_mapping.py` (https://github.com/google-pytorch/torch_tpu): the `"tpu"` device and
    ///   `torch.accelerator.is_available()`
    pub(crate) static CUDA_AVAILABILITY_CHOICE = {
        code: "TPU402",
        name: "cuda-availability-choice",
        severity: Warning,
        fix: Always,
        kinds: ["conditional_expression"],
        tokens: ["cuda"],
        check: check,
    }
}

/// TPU402
fn check<'t>(context: &mut Context<'t, '_>, choice: Node<'t>) {
    if !is_cuda_or_cpu_choice(context, choice) {
        return;
    }
    // Part of a longer f-string (`f"{'cuda' if is_cuda else 'cpu'}_time_total"`, a profiler
    // key): a name built from the device's name, not a device.
    if context
        .parent(choice)
        .filter(|p| p.is(kind::INTERPOLATION))
        .and_then(|interpolation| context.parent(interpolation))
        .is_some_and(|string| {
            string.named_nodes().any(|part| {
                part.is(kind::STRING_CONTENT)
                    && !syntax::node_text(part, context.source()).trim().is_empty()
            })
        })
    {
        return;
    }
    // Report a nested `"cuda" if a else "mps" if b else "cpu"` once, at the outermost choice.
    if context
        .parent(choice)
        .is_some_and(|p| p.is(kind::CONDITIONAL_EXPRESSION) && is_cuda_or_cpu_choice(context, p))
    {
        return;
    }
    // Replace `torch.device(<choice>)` as a whole.
    let mut target = choice;
    if let Some(arguments) = context.parent(choice).filter(|p| p.is(kind::ARGUMENT_LIST))
        && let Some(call) = context.parent(arguments)
        && context.semantic().call_qualified_name(call).as_deref() == Some("torch.device")
        && syntax::positional_args(arguments).len() == 1
    {
        target = call;
    }
    // `torch.load(path, map_location=...)` only says where the loaded tensors land: on a TPU
    // VM the CPU branch loads into host memory, which is what TPU406 recommends before a move.
    if context.parent(target).is_some_and(|parent| {
        parent.is(kind::KEYWORD_ARGUMENT)
            && parent
                .field("name")
                .is_some_and(|name| syntax::text_is(name, context.source(), "map_location"))
    }) {
        return;
    }
    // `device = "cuda" if ... else "cpu"` in a function that never reads it (a leftover while
    // a framework places the model): nothing runs on the CPU because of it.
    if is_unread_binding(context, target) {
        return;
    }
    let message = "Device chosen between CUDA and CPU runs on the CPU on a TPU VM".to_string();
    let fix = match tpu_api::device_expression(context, target) {
        Some(device) => {
            let expression = device.expression.clone();
            let mut edits = device.edits();
            edits.push(Edit::replace(target.byte_range(), expression.clone()));
            Fix::new(
                Applicability::Unsafe.min(device.applicability),
                format!("Use `{expression}`"),
                edits,
            )
        }
        None => {
            let device = tpu_api::suggested_device_expression(context, target);
            let mut edits = device.edits();
            edits.push(Edit::replace(
                target.byte_range(),
                device.expression.clone(),
            ));
            Fix::display_only(
                format!(
                    "Use `{}` ({})",
                    device.expression,
                    tpu_api::OTHER_BACKEND_DEVICE
                ),
                edits,
            )
        }
    };
    context.report(choice.byte_range(), message).fix = Some(fix);
}

/// Whether `value` is bound to a function's local (`device = value`) that the function never
/// mentions again (nested functions included, so a closure's read or a `global` declaration
/// counts). A class attribute is read as `self.name`, and a module-level name may be read by
/// another statement or module: neither is ever unread. The function is part of the choice's
/// top-level statement, so the answer changes only with that statement's text.
fn is_unread_binding<'t>(context: &Context<'t, '_>, value: Node<'t>) -> bool {
    let Some(assignment) = context.parent(value).filter(|p| p.is(kind::ASSIGNMENT)) else {
        return false;
    };
    let Some(target) = assignment
        .field("left")
        .filter(|left| left.is(kind::IDENTIFIER))
    else {
        return false;
    };
    if assignment.field("right").map(|right| right.id()) != Some(value.id()) {
        return false;
    }
    let mut node = assignment;
    let scope = loop {
        let Some(parent) = context.parent(node) else {
            return false;
        };
        match parent.kind_key() {
            kind::FUNCTION_DEFINITION => break parent,
            kind::CLASS_DEFINITION | kind::LAMBDA => return false,
            _ => node = parent,
        }
    };
    let source = context.source();
    let name = syntax::node_text(target, source);
    // Any other identifier of that spelling counts, but for an attribute's name (`torch.device`,
    // `config.device`: preceded by the dot). A keyword (`f(device=...)`) counts: cheap, and only
    // ever keeps a finding.
    !syntax::any_in_subtree(scope, usize::MAX, |node| {
        if node.is(kind::IDENTIFIER)
            && node.id() != target.id()
            && syntax::node_text(node, source) == name
            && source.as_bytes().get(node.start_byte().wrapping_sub(1)) != Some(&b'.')
        {
            Visit::Found
        } else {
            Visit::Enter
        }
    })
}

/// Whether a conditional expression picks a CUDA device in one branch and ends in the CPU in the
/// other (possibly through further choices such as `"mps"`).
pub(crate) fn is_cuda_or_cpu_choice<'t>(context: &Context<'t, '_>, choice: Node<'t>) -> bool {
    let (Some(then_branch), Some(condition), Some(else_branch)) = (
        choice.named_child(0),
        choice.named_child(1),
        choice.named_child(2),
    ) else {
        return false;
    };
    // `"cuda" if "cuda" in device else "cpu"` derives a device *type* from a device already
    // chosen (for `torch.autocast`); it does not choose where the program runs.
    if condition_inspects_device_string(context, condition) {
        return false;
    }
    device_literal(context, then_branch) == Some(Device::Cuda)
        && ends_in_cpu(context, else_branch, 0)
}

/// Whether the condition compares with a `"cuda…"` string literal (`"cuda" in device`,
/// `device.type == "cuda"`, `str(device).startswith("cuda")`).
fn condition_inspects_device_string<'t>(context: &Context<'t, '_>, condition: Node<'t>) -> bool {
    let source = context.source();
    syntax::any_in_subtree(condition, usize::MAX, |node| {
        match syntax::string_value(node, source) {
            Some(text) if text.starts_with("cuda") => Visit::Found,
            _ => Visit::Enter,
        }
    })
}

fn ends_in_cpu(context: &Context<'_, '_>, branch: Node<'_>, depth: usize) -> bool {
    let branch = syntax::unparenthesize(branch);
    if branch.is(kind::CONDITIONAL_EXPRESSION) && depth < 4 {
        return branch
            .named_child(2)
            .is_some_and(|last| ends_in_cpu(context, last, depth + 1));
    }
    device_literal(context, branch) == Some(Device::Cpu)
}

/// `"cuda:0"` or `torch.device("cuda")` → the device it names.
fn device_literal<'t>(context: &Context<'t, '_>, node: Node<'t>) -> Option<Device> {
    let node = syntax::unparenthesize(node);
    let source = context.source();
    if let Some(text) = syntax::string_value(node, source) {
        let kind = text.split(':').next().unwrap_or("");
        return matches!(kind, "cuda" | "cpu").then(|| device_from_str(&text));
    }
    if node.is(kind::CALL)
        && context.semantic().call_qualified_name(node).as_deref() == Some("torch.device")
        && let Some((_, arguments)) = context.call_parts(node)
        && let Some(first) = syntax::positional_args(arguments).first()
        && let Some(text) = syntax::string_value(*first, source)
    {
        let kind = text.split(':').next().unwrap_or("");
        return matches!(kind, "cuda" | "cpu").then(|| device_from_str(&text));
    }
    None
}
