//! TPU614: transformers' `is_torch_tpu_available()` guarding PyTorch/XLA code, though it now
//! probes TorchTPU.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::semantic::Backend;
use crate::torch_api;

declare_rule! {
    /// ## What it does
    /// Checks for calls of Hugging Face transformers' `is_torch_tpu_available()` in code that
    /// targets PyTorch/XLA (a file that imports `torch_xla`, names the `"xla"` device, or a
    /// project configured with `backend = "torch_xla"`).
    ///
    /// ## Why is this bad?
    /// `is_torch_tpu_available()` used to mean "torch_xla is importable". transformers
    /// deprecated it in favour of `is_torch_xla_available()` (huggingface/transformers#29334,
    /// 2024), and in 2026 gave the name to the TorchTPU backend: it now probes `torch_tpu`
    /// (huggingface/transformers#45918). With a current transformers, a guard such as
    /// `if is_torch_tpu_available(): import torch_xla.core.xla_model as xm` is false on a
    /// PyTorch/XLA machine, so the torch_xla branch silently never runs (the model stays off
    /// the TPU, `xm` is never bound), and on a TorchTPU machine it is true and imports a
    /// torch_xla that is not installed.
    ///
    /// ## Example
    /// ```python
    /// from transformers.utils import is_torch_tpu_available
    ///
    /// if is_torch_tpu_available():
    ///     import torch_xla.core.xla_model as xm
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// from transformers.utils import is_torch_xla_available
    ///
    /// if is_torch_xla_available():
    ///     import torch_xla.core.xla_model as xm
    /// ```
    ///
    /// ## Fix safety
    /// No fix is offered: the import must change with every call, `is_torch_xla_available`
    /// does not exist in transformers before 4.39, and `check_device=True` has no exact
    /// equivalent (`is_torch_xla_available(check_is_tpu=True)` is the nearest).
    ///
    /// ## Known problems
    /// A file that targets TorchTPU, or shows no backend at all, is not reported: there the
    /// probe may be meant in its new sense. Calls through a name the file does not import from
    /// transformers are not recognised.
    ///
    /// ## References
    /// - https://github.com/huggingface/transformers/pull/45918 ("Add initial torch_tpu backend
    ///   support": `is_torch_tpu_available(check_device=False)` probes `torch_tpu`)
    /// - https://github.com/huggingface/transformers/pull/29334 (`is_torch_xla_available`
    ///   replaces the deprecated `is_torch_tpu_available`)
    pub(crate) static TORCH_TPU_PROBE_FOR_TORCH_XLA = {
        code: "TPU614",
        name: "torch-tpu-probe-for-torch-xla",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["is_torch_tpu_available"],
        calls: ["is_torch_tpu_available"],
        check: check,
    }
}

/// TPU614
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((function, _)) = context.call_parts(call) else {
        return;
    };
    if context.backend() != Backend::TorchXla {
        return;
    }
    let Some(qualified) = context.qualified_name(function) else {
        return;
    };
    if !torch_api::is_repurposed_tpu_probe(&qualified) {
        return;
    }
    context.report(
        function.byte_range(),
        "`is_torch_tpu_available()` now probes TorchTPU, not torch_xla (transformers#45918): \
         false on a PyTorch/XLA machine; use `is_torch_xla_available()`",
    );
}
