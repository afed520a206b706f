//! TPU411: CUDA backend flags that ask for a precision or determinism guarantee a TPU does not
//! give (`allow_tf32 = False`, `cudnn.deterministic = True`).

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::{helpers, tpu_api};
use crate::semantic::Backend;
use crate::syntax::{self, NodeExt};

declare_rule! {
    /// ## What it does
    /// Checks for assignments to CUDA backend flags that request a guarantee: full-precision
    /// float32 matmuls and convolutions (`torch.backends.cuda.matmul.allow_tf32 = False`,
    /// `torch.backends.cudnn.allow_tf32 = False`, `...fp32_precision = "ieee"`, reduced-precision
    /// reductions turned off) or deterministic kernels (`torch.backends.cudnn.deterministic =
    /// True`).
    ///
    /// ## Why is this bad?
    /// These flags configure cuDNN and CUDA matmuls only. On a TPU the code still runs, but
    /// without the guarantee it asked for: TorchTPU's float32 matmuls default to a one-pass
    /// bfloat16 product (raised with `torch.tpu.precision(...)`), PyTorch/XLA has its own MXU
    /// precision setting, and neither flag makes TPU kernels deterministic. A test tolerance or
    /// a reproducibility claim built on the flag silently stops holding.
    ///
    /// Flags that only *allow* something faster — enabling TF32, `cudnn.benchmark` — are not
    /// reported: on a TPU they are harmless no-ops, and code written for both devices sets them
    /// routinely.
    ///
    /// ## Example
    /// ```python
    /// torch.backends.cuda.matmul.allow_tf32 = False
    /// torch.backends.cudnn.deterministic = True
    /// ```
    ///
    /// Use instead (TorchTPU, when float32 accuracy matters):
    /// ```python
    /// with torch.tpu.precision(torch.tpu.Precision.HIGHEST):
    ///     logits = model(x)
    /// ```
    ///
    /// ## Known problems
    /// Only literal values are judged. Assignments under a CUDA check are not reported. Reading
    /// a flag is never reported.
    ///
    /// ## Fix safety
    /// No fix: the TPU equivalent depends on what the code needs the guarantee for.
    ///
    /// ## References
    /// - TorchTPU `docs/gpu_to_tpu.md` and `docs/notebooks/precision_management.py` (https://github.com/google-pytorch/torch_tpu): TPU
    ///   matmul precision (`torch.tpu.precision`, `allow_excess_precision`), contrasted with CUDA's
    ///   `allow_tf32`
    /// - https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices
    ///   (the flags configure CUDA and cuDNN only)
    pub(crate) static CUDA_BACKEND_FLAG = {
        code: "TPU411",
        name: "cuda-backend-flag",
        severity: Info,
        fix: None,
        kinds: ["assignment"],
        tokens: ["cuda", "cudnn"],
        check: check,
    }
}

/// TPU411
fn check<'t>(context: &mut Context<'t, '_>, assignment: Node<'t>) {
    let (Some(left), Some(right)) = (assignment.field("left"), assignment.field("right")) else {
        return;
    };
    if left.is_not(kind::ATTRIBUTE) {
        return;
    }
    let Some(qualified) = context.qualified_name(left) else {
        return;
    };
    let Some(flag) = qualified
        .strip_prefix("torch.backends.cudnn.")
        .or_else(|| qualified.strip_prefix("torch.backends.cuda."))
    else {
        return;
    };
    let Some(request) = guarantee_requested(context, flag, right) else {
        return;
    };
    if tpu_api::guarded_by_cuda_check(context, assignment) {
        return;
    }
    let hint = match (request, context.backend()) {
        (Guarantee::Precision, Backend::TorchTpu) => {
            "; TPU matmul precision is set with `torch.tpu.precision(...)`"
        }
        (Guarantee::Precision, _) => "; TPU float32 matmuls may use bfloat16 passes",
        (Guarantee::Determinism, _) => "; it does not make TPU kernels deterministic",
    };
    let message = format!("`{qualified}` asks for a CUDA-only guarantee{hint}");
    context.report(left.byte_range(), message);
}

/// What a flag assignment asks for.
#[derive(Clone, Copy)]
enum Guarantee {
    Precision,
    Determinism,
}

/// The guarantee `flag = value` requests, if any (only literal values are judged).
fn guarantee_requested<'t>(
    context: &Context<'t, '_>,
    flag: &str,
    value: Node<'t>,
) -> Option<Guarantee> {
    let last = flag.rsplit('.').next().unwrap_or(flag);
    match last {
        "allow_tf32"
        | "allow_fp16_reduced_precision_reduction"
        | "allow_bf16_reduced_precision_reduction" => {
            (helpers::literal_bool(value) == Some(false)).then_some(Guarantee::Precision)
        }
        "fp32_precision" => syntax::string_value(value, context.source())
            .is_some_and(|v| v == "ieee")
            .then_some(Guarantee::Precision),
        "deterministic" => {
            (helpers::literal_bool(value) == Some(true)).then_some(Guarantee::Determinism)
        }
        _ => None,
    }
}
