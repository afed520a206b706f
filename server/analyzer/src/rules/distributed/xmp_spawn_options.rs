//! TPU706: `xmp.spawn(..., nprocs=8)`: PJRT's spawn accepts only `None` or 1.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;
use crate::syntax::{self, NodeExt};

declare_rule! {
    /// ## What it does
    /// Checks for `torch_xla.distributed.xla_multiprocessing.spawn(...)` (`xmp.spawn`) called
    /// with an explicit `nprocs` other than `None` or `1`.
    ///
    /// ## Why is this bad?
    /// Under PJRT (the only runtime since torch_xla 2.1) `xmp.spawn` starts one process per TPU
    /// device itself, and any other `nprocs` raises `ValueError: Unsupported nprocs (8). Please
    /// use nprocs=1 or None (default)`. Code written for the XRT era (`nprocs=8`) fails at
    /// launch. `torch_xla.launch(fn, args)` is the documented launcher and takes no `nprocs`.
    ///
    /// `start_method="fork"` is not reported: torch_xla documents it (with `MpModelWrapper`) to
    /// save host memory, and notebooks need it.
    ///
    /// ## Example
    /// ```python
    /// xmp.spawn(_mp_fn, args=(flags,), nprocs=8)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// torch_xla.launch(_mp_fn, args=(flags,))
    /// ```
    /// (limit the devices with `TPU_NUM_DEVICES` / `X_NUM_DEVICES` if needed).
    ///
    /// ## Fix safety
    /// No fix: removing `nprocs` changes how many processes run when the value was a variable.
    ///
    /// ## References
    /// - https://github.com/pytorch/xla/blob/v2.9.0/torch_xla/_internal/pjrt.py (`spawn`: the
    ///   `Unsupported nprocs` `ValueError`)
    /// - PyTorch/XLA, *PyTorch on XLA devices* (https://github.com/pytorch/xla/blob/master/docs/source/learn/pytorch-on-xla-devices.md): `torch_xla.launch`
    pub(crate) static XMP_SPAWN_NPROCS = {
        code: "TPU706",
        name: "xmp-spawn-nprocs",
        severity: Error,
        fix: None,
        kinds: ["call"],
        tokens: ["spawn"],
        calls: ["spawn"],
        check: check,
    }
}

/// TPU706
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if helpers::call_matches(
        context,
        call,
        &["torch_xla.distributed.xla_multiprocessing.spawn"],
    )
    .is_none()
    {
        return;
    }
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    let source = context.source();
    let nprocs = syntax::argument(arguments, 2, "nprocs", source);
    if let Some(nprocs) = nprocs {
        let harmless = nprocs.is(kind::NONE)
            || helpers::literal_number(nprocs, source).is_some_and(|n| n == 1.0);
        if !harmless {
            context.report(
                nprocs.byte_range(),
                format!(
                    "`nprocs={}` raises `ValueError` under PJRT (only `None` or 1); use `torch_xla.launch`",
                    helpers::short_code(context.text(nprocs))
                ),
            );
        }
    }
}
