//! TPU403: `.cuda()` on a tensor or module.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::rules::tpu_api;
use crate::semantic::ValueKind;

declare_rule! {
    /// ## What it does
    /// Checks for `.cuda()` calls on tensors and modules.
    ///
    /// ## Why is this bad?
    /// `.cuda()` moves data to an NVIDIA GPU. A TPU VM has none: the call raises
    /// (`Torch not compiled with CUDA enabled`, or no NVIDIA driver) the first time it runs. On a
    /// TPU the data must go to the XLA device (PyTorch/XLA) or the `"tpu"` device (TorchTPU).
    ///
    /// ## Example
    /// ```python
    /// model = Net().cuda()
    /// for x, y in loader:
    ///     x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    /// ```
    ///
    /// Use instead (PyTorch/XLA):
    /// ```python
    /// import torch_xla
    ///
    /// model = Net().to(torch_xla.device())
    /// for x, y in loader:
    ///     x, y = x.to(torch_xla.device(), non_blocking=True), y.to(torch_xla.device(), non_blocking=True)
    /// ```
    /// With TorchTPU, `.to(torch.device("tpu"))`.
    ///
    /// ## Fix safety
    /// The fix rewrites `.cuda(...)` to `.to(<backend device>)`, keeps `non_blocking=`, drops a
    /// GPU index, and adds `import torch_xla` when the file lacks it. It is unsafe: the code no
    /// longer runs on GPUs. When the backend is unknown the fix is display-only.
    ///
    /// ## Known problems
    /// Calls under a CUDA check (`if torch.cuda.is_available():`, `if args.cuda:`) or in a
    /// function whose name mentions CUDA are not reported: the author already chose per device.
    ///
    /// ## References
    /// - PyTorch/XLA, *Migration to XLA on TPUs — Device handling* (https://github.com/pytorch/xla/blob/master/docs/source/learn/migration-to-xla-on-tpus.md)
    /// - TorchTPU `docs/notebooks/api_mapping.py` (https://github.com/google-pytorch/torch_tpu): `tensor.to("tpu")`
    pub(crate) static CUDA_METHOD_CALL = {
        code: "TPU403",
        name: "cuda-method-call",
        severity: Error,
        fix: Always,
        kinds: ["call"],
        tokens: ["cuda"],
        calls: ["cuda"],
        check: check,
    }
}

/// TPU403
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((receiver, method)) = context.method_call(call) else {
        return;
    };
    if !context.text_is(method, "cuda") {
        return;
    }
    if !context.semantic().imports_module("torch") {
        return;
    }
    let receiver_fact = context.fact(receiver);
    if matches!(
        receiver_fact.kind,
        ValueKind::Namespace | ValueKind::NumpyArray | ValueKind::Scalar | ValueKind::Container
    ) {
        return;
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    // `torch.Tensor.cuda(x)` / `nn.Module.cuda(m)` through the class are rare; skip them.
    if context
        .qualified_name(function)
        .is_some_and(|q| q.starts_with("torch"))
    {
        return;
    }
    if tpu_api::guarded_by_cuda_check(context, call) {
        return;
    }
    // Keep `non_blocking=`; anything else (a GPU index, `device=`) has no TPU meaning.
    let kept: Option<&str> = context
        .keyword_arg_node(arguments, "non_blocking")
        .map(|kw| context.text(kw));
    // `to(device)`, or `to(device, non_blocking=...)`.
    let to_call = |device: &str| match kept {
        Some(kept) => format!("to({device}, {kept})"),
        None => format!("to({device})"),
    };
    let replace_range = method.start_byte()..call.end_byte();
    let report_range = replace_range.clone();
    let message = format!(
        "`{}.cuda()` needs a CUDA GPU",
        crate::rules::helpers::short_code(context.text(receiver))
    );
    let fix = match tpu_api::device_expression(context, call) {
        Some(device) => {
            let expression = device.expression.clone();
            let mut edits = device.edits();
            edits.push(Edit::replace(replace_range, to_call(&expression)));
            Fix::new(
                Applicability::Unsafe.min(device.applicability),
                format!("Replace `.cuda()` with `.to({expression})`"),
                edits,
            )
        }
        None => {
            let device = tpu_api::suggested_device_expression(context, call);
            let mut edits = device.edits();
            edits.push(Edit::replace(replace_range, to_call(&device.expression)));
            Fix::display_only(
                format!(
                    "Replace `.cuda()` with `.to({})` ({})",
                    device.expression,
                    tpu_api::OTHER_BACKEND_DEVICE
                ),
                edits,
            )
        }
    };
    context.report(report_range, message).fix = Some(fix);
}
