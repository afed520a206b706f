//! TPU406: `torch.load(...)` without `map_location`.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Fix;
use crate::rules::{helpers, tpu_api};
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.load(...)` calls without a `map_location` argument.
    ///
    /// ## Why is this bad?
    /// `torch.load` restores every tensor to the device it was saved from. A checkpoint written
    /// on a GPU fails to load on a TPU VM (`Attempting to deserialize object on a CUDA device but
    /// torch.cuda.is_available() is False`), and PyTorch/XLA's troubleshooting guide warns that
    /// tensors saved from XLA devices are loaded back onto those devices, which fails when they
    /// are not there. Loading onto the CPU first and moving the model afterwards works everywhere.
    ///
    /// ## Example
    /// ```python
    /// state = torch.load("checkpoint.pt")
    /// model.load_state_dict(state)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// state = torch.load("checkpoint.pt", map_location="cpu")
    /// model.load_state_dict(state)
    /// model.to(device)
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `map_location="cpu"`. It is unsafe: code that relied on tensors coming back
    /// on their original device now gets CPU tensors and must move them.
    ///
    /// ## Known problems
    /// Checkpoints saved from the CPU load fine without `map_location`; the rule cannot see
    /// where a file was written. Calls passing `**kwargs` are not reported, nor loads that read
    /// back what the same function just saved (a `save(...)` or `BytesIO` earlier in the scope).
    ///
    /// ## References
    /// - pitfalls.md B.5 #58 and #57: PyTorch/XLA, *Troubleshooting — quirks* (saving and loading
    ///   XLA tensors) and *PyTorch on XLA devices — Saving and Loading*
    /// - torchtpu.md A.10: moving from torch_xla checkpoints to TorchTPU
    pub(crate) static TORCH_LOAD_WITHOUT_MAP_LOCATION = {
        code: "TPU406",
        name: "torch-load-without-map-location",
        severity: Warning,
        fix: Always,
        kinds: ["call"],
        tokens: ["load"],
        check: check,
    }
}

/// TPU406
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if helpers::call_matches(context, call, &["torch.load"]).is_none() {
        return;
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    if syntax::has_splat(arguments)
        || context.keyword_arg(arguments, "map_location").is_some()
        || syntax::positional_args(arguments).len() >= 2
        || syntax::positional_args(arguments).is_empty()
    {
        return;
    }
    if round_trip_in_same_scope(context, call) {
        return;
    }
    let edit = tpu_api::insert_argument(arguments, "map_location=\"cpu\"");
    context
        .report(
            function.start_byte()..call.end_byte(),
            "`torch.load` without `map_location` restores tensors to the device they were saved on",
        )
        .fix = Some(Fix::unsafe_edit("Add `map_location=\"cpu\"`", vec![edit]));
}

/// `torch.save(...)` / `xm.save(...)` / an in-memory `BytesIO` earlier in the same function (or
/// module): the load reads back what this process wrote, on the devices it wrote from.
fn round_trip_in_same_scope<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let mut scope = call;
    while let Some(parent) = context.parent(scope) {
        scope = parent;
        if parent.kind_name() == "function_definition" {
            break;
        }
    }
    let source = context.source();
    let before = source
        .get(scope.start_byte()..call.start_byte())
        .unwrap_or("");
    before.contains("torch.save(") || before.contains(".save(") || before.contains("BytesIO")
}
