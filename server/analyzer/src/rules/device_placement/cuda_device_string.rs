//! TPU401: a hard-coded `"cuda"` device string.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Edit, Fix};
use crate::rules::device_placement::cuda_availability_choice::is_cuda_or_cpu_choice;
use crate::rules::tpu_api;
use crate::syntax::NodeExt;
use crate::syntax::{self, node_text};

declare_rule! {
    /// ## What it does
    /// Checks for the device string `"cuda"` or `"cuda:N"` where a device is expected:
    /// `torch.device("cuda")`, `device="cuda"`, and `.to("cuda")`.
    ///
    /// ## Why is this bad?
    /// A TPU VM has no CUDA device. Moving a tensor or module to `"cuda"` raises
    /// (`Torch not compiled with CUDA enabled` / no NVIDIA driver) as soon as the code runs on a
    /// TPU host. PyTorch/XLA's migration guide replaces CUDA device handling with
    /// `torch_xla.device()`; TorchTPU uses the device `"tpu"`.
    ///
    /// ## Example
    /// ```python
    /// model = Net().to("cuda")
    /// x = torch.zeros(8, 128, device="cuda:0")
    /// ```
    ///
    /// Use instead (PyTorch/XLA):
    /// ```python
    /// model = Net().to("xla")
    /// x = torch.zeros(8, 128, device="xla")
    /// ```
    /// or (TorchTPU) `"tpu"`. (`torch.accelerator.current_accelerator()` is no substitute: it
    /// returns `None` under PyTorch/XLA, and `torch.device(it, 0)` is a `TypeError`.)
    ///
    /// ## Fix safety
    /// The fix replaces the string with the device of the file's backend (`"xla"` for
    /// PyTorch/XLA, `"tpu"` for TorchTPU). It is unsafe: the program no longer runs on GPUs. When
    /// the backend is unknown the fix is a display-only suggestion of `"tpu"` whose title names
    /// `"xla"` for PyTorch/XLA.
    ///
    /// ## Known problems
    /// A device compared rather than used (`device == torch.device("cuda")`,
    /// `device.type == "cuda"`, `device in ("cuda", "cuda:0")`) is a test, not a placement, and is
    /// not reported, and neither is the type read off a literal device (`torch.device("cuda").type`
    /// is the string `"cuda"`). Strings under a CUDA check (`if torch.cuda.is_available():`), in CUDA-specific functions
    /// or tests (`@unittest.skipIf(not torch.cuda.is_available(), ...)`) are not reported. The
    /// default of a parameter that a method passes on to the method it overrides
    /// (`super().__init__(..., device)`) is the overridden signature's default written again and
    /// is not reported there; the base class's own default is (when the base is defined in
    /// another package, nothing reports it).
    ///
    /// ## References
    /// - PyTorch/XLA, *Migration to XLA on TPUs — Device handling* (https://github.com/pytorch/xla/blob/master/docs/source/learn/migration-to-xla-on-tpus.md)
    /// - TorchTPU `docs/notebooks/api_mapping.py` (https://github.com/google-pytorch/torch_tpu): `"cuda"` → `"tpu"`
    pub(crate) static CUDA_DEVICE_STRING = {
        code: "TPU401",
        name: "cuda-device-string",
        severity: Error,
        fix: Sometimes,
        kinds: ["string"],
        tokens: ["cuda"],
        check: check,
    }
}

/// TPU401
fn check<'t>(context: &mut Context<'t, '_>, string: Node<'t>) {
    let Some(value) = syntax::string_value(string, context.source()) else {
        return;
    };
    let is_cuda = value == "cuda"
        || value
            .strip_prefix("cuda:")
            .is_some_and(|index| !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()));
    if !is_cuda || !is_device_position(context, string) {
        return;
    }
    // `"cuda" if torch.cuda.is_available() else "cpu"` has its own rule (TPU402).
    if in_cuda_or_cpu_choice(context, string)
        || tpu_api::guarded_by_cuda_check(context, string)
        || default_forwarded_to_super(context, string)
    {
        return;
    }
    let quote = node_text(string, context.source())
        .chars()
        .next()
        .filter(|c| *c == '"' || *c == '\'')
        .unwrap_or('"');
    let backend = context.backend();
    let message = format!("Hard-coded CUDA device `{value}`");
    let fix = match backend.device_type() {
        Some(device) => Fix::unsafe_edit(
            format!("Replace with `{quote}{device}{quote}`"),
            vec![Edit::replace(
                string.byte_range(),
                format!("{quote}{device}{quote}"),
            )],
        ),
        None => Fix::display_only(
            // `"tpu"` keeps `torch.device("cuda", i)` valid as `torch.device("tpu", i)`;
            // `torch.accelerator.current_accelerator()` would not (a `TypeError`, and `None`
            // under PyTorch/XLA).
            format!(
                "Replace with `{quote}tpu{quote}` (TorchTPU; `{quote}xla{quote}` with PyTorch/XLA)"
            ),
            vec![Edit::replace(
                string.byte_range(),
                format!("{quote}tpu{quote}"),
            )],
        ),
    };
    context.report(string.byte_range(), message).fix = Some(fix);
}

/// `torch.device(<s>)`, `device=<s>` in any call, `.to(<s>)`, `.to(device=<s>)`.
fn is_device_position<'t>(context: &Context<'t, '_>, string: Node<'t>) -> bool {
    let Some(parent) = context.parent(string) else {
        return false;
    };
    let source = context.source();
    match parent.kind_key() {
        kind::KEYWORD_ARGUMENT => parent
            .field("name")
            .is_some_and(|name| matches!(node_text(name, source), "device" | "map_location")),
        kind::ARGUMENT_LIST => {
            let Some(call) = context.parent(parent) else {
                return false;
            };
            let is_first = syntax::positional_args(parent)
                .first()
                .is_some_and(|first| first.id() == string.id());
            if !is_first {
                return false;
            }
            if context.semantic().call_qualified_name(call).as_deref() == Some("torch.device") {
                // `self.device == torch.device("cuda")` tests the device, and an attribute of
                // it (`torch.device("cuda").type`, the string `"cuda"`) reads it: neither
                // places anything.
                let read = context
                    .parent(call)
                    .is_some_and(|parent| parent.is(kind::ATTRIBUTE));
                return !syntax::is_comparison_operand(call) && !read;
            }
            context
                .method_call(call)
                .is_some_and(|(_, method)| syntax::text_is(method, source, "to"))
        }
        _ => false,
    }
}

/// Whether the string is in the default of a parameter that its method passes on by name to the
/// method it overrides (`def __init__(self, device=torch.device("cuda")): super().__init__(device)`):
/// the override repeats the overridden signature, whose own default is reported where it is
/// written (`FunctionSummary::forwarded_to_super`), not in each of a hierarchy's copies.
fn default_forwarded_to_super<'t>(context: &Context<'t, '_>, string: Node<'t>) -> bool {
    let Some(call) = context
        .parent(string)
        .and_then(|arguments| context.parent(arguments))
    else {
        return false;
    };
    let Some(parameter) = context.parent(call).filter(|parameter| {
        parameter.is_any(&[kind::DEFAULT_PARAMETER, kind::TYPED_DEFAULT_PARAMETER])
            && parameter
                .field("value")
                .is_some_and(|value| value.id() == call.id())
    }) else {
        return false;
    };
    let Some(name) = parameter.field("name") else {
        return false;
    };
    let name = node_text(name, context.source());
    context
        .parent(parameter)
        .and_then(|parameters| context.parent(parameters))
        .and_then(|function| context.semantic().function_summary(function))
        .is_some_and(|summary| {
            summary
                .forwarded_to_super
                .iter()
                .any(|&position| summary.parameters.get(position).is_some_and(|p| p == name))
        })
}

/// Whether the string is a branch of a CUDA-or-CPU choice (directly or inside `torch.device(...)`).
fn in_cuda_or_cpu_choice<'t>(context: &Context<'t, '_>, string: Node<'t>) -> bool {
    let mut current = context.parent(string);
    for _ in 0..4 {
        let Some(node) = current else { return false };
        if node.is(kind::CONDITIONAL_EXPRESSION) {
            return is_cuda_or_cpu_choice(context, node);
        }
        current = context.parent(node);
    }
    false
}
