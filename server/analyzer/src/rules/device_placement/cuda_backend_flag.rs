//! TPU411: `torch.backends.cudnn.*` / `torch.backends.cuda.*` settings, which do nothing on a TPU.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::DiagnosticTag;
use crate::rules::tpu_api;
use crate::semantic::Backend;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for assignments to CUDA backend flags such as `torch.backends.cudnn.benchmark`,
    /// `torch.backends.cudnn.deterministic` and `torch.backends.cuda.matmul.allow_tf32`.
    ///
    /// ## Why is this bad?
    /// These flags configure cuDNN and CUDA matmuls. On a TPU they have no effect, so code that
    /// relies on them for speed, determinism or precision silently gets none of it. TPU matmul
    /// precision is controlled differently: TorchTPU's f32 matmuls default to a one-pass bf16
    /// product and are raised with `torch.tpu.precision(...)`; PyTorch/XLA has its own MXU
    /// precision settings.
    ///
    /// ## Example
    /// ```python
    /// torch.backends.cuda.matmul.allow_tf32 = True
    /// torch.backends.cudnn.benchmark = True
    /// ```
    ///
    /// Use instead (TorchTPU, when f32 accuracy matters):
    /// ```python
    /// with torch.tpu.precision(torch.tpu.Precision.HIGHEST):
    ///     logits = model(x)
    /// ```
    ///
    /// ## Known problems
    /// Assignments under a CUDA check are not reported. Reading a flag is never reported.
    ///
    /// ## References
    /// - pitfalls.md B.5 #52: TorchTPU `docs/gpu_to_tpu.md` (contrasts CUDA `allow_tf32`)
    /// - torchtpu.md A.7: TPU matmul precision (`torch.tpu.precision`, `allow_excess_precision`)
    pub(crate) static CUDA_BACKEND_FLAG = {
        code: "TPU411",
        name: "cuda-backend-flag",
        severity: Info,
        fix: None,
        kinds: ["assignment"],
        check: check,
    }
}

/// TPU411
fn check<'t>(context: &mut Context<'t, '_>, assignment: Node<'t>) {
    let Some(left) = assignment.field("left") else {
        return;
    };
    if left.kind_name() != "attribute" {
        return;
    }
    let Some(qualified) = context.qualified_name(left) else {
        return;
    };
    let is_cuda_flag = qualified.starts_with("torch.backends.cudnn.")
        || qualified.starts_with("torch.backends.cuda.");
    if !is_cuda_flag || tpu_api::guarded_by_cuda_check(context, assignment) {
        return;
    }
    let hint = if qualified.contains("tf32") && context.backend() == Backend::TorchTpu {
        "; TPU matmul precision is set with `torch.tpu.precision(...)`"
    } else {
        ""
    };
    let message = format!("`{qualified}` has no effect on a TPU{hint}");
    context.report(left.byte_range(), message).tag = Some(DiagnosticTag::Unnecessary);
}
