//! TPU702: `DistributedDataParallel(..., device_ids=...)` under TorchTPU.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Fix;
use crate::semantic::Backend;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks, in TorchTPU files, for `DistributedDataParallel(...)` given `device_ids=` (or
    /// `output_device=`).
    ///
    /// ## Why is this bad?
    /// `device_ids` names CUDA devices. Under TorchTPU each process sees its own core as `tpu:0`,
    /// and TorchTPU's distributed guide says: "On TPU, we don't pass device_ids to DDP".
    ///
    /// ## Example
    /// ```python
    /// model = DDP(model, device_ids=[local_rank])
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = DDP(model)
    /// ```
    ///
    /// ## Fix safety
    /// The fix removes the argument. It is unsafe: the same file no longer pins GPUs per rank.
    ///
    /// ## References
    /// - TorchTPU `docs/notebooks/distributed_training_101.py` (https://github.com/google-pytorch/torch_tpu): "do not pass `device_ids`
    ///   to DDP"
    pub(crate) static DDP_DEVICE_IDS_ON_TPU = {
        code: "TPU702",
        name: "ddp-device-ids-on-tpu",
        severity: Error,
        fix: Always,
        kinds: ["call"],
        check: check,
    }
}

/// TPU702
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if context.backend() != Backend::TorchTpu {
        return;
    }
    let Some(qualified) = context.semantic().call_qualified_name(call) else {
        return;
    };
    if !qualified.ends_with("DistributedDataParallel") {
        return;
    }
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    for keyword in ["device_ids", "output_device"] {
        let Some(argument) = context.keyword_arg_node(arguments, keyword) else {
            continue;
        };
        if argument.field("value").is_some_and(|v| v.is(kind::NONE)) {
            continue;
        }
        let edit = crate::fix::edits::remove_argument(context.source(), arguments, argument);
        context
            .report(
                argument.byte_range(),
                format!("DDP `{keyword}=` names CUDA devices; TorchTPU takes none"),
            )
            .fix = Some(Fix::unsafe_edit(format!("Remove `{keyword}=`"), vec![edit]));
    }
}
