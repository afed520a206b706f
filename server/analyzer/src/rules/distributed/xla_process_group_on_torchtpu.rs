//! TPU707: `dist.init_process_group("xla", init_method="xla://")` in TorchTPU code.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Edit, Fix};
use crate::rules::{helpers, tpu_api};
use crate::semantic::Backend;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks, in files that target TorchTPU, for `torch.distributed.init_process_group` with
    /// PyTorch/XLA's `backend="xla"` or `init_method="xla://"`.
    ///
    /// ## Why is this bad?
    /// The `"xla"` backend and the `xla://` rendezvous are registered by
    /// `torch_xla.distributed.xla_backend`; TorchTPU does not provide them, so the call fails
    /// with an unknown backend or init method. TorchTPU's collectives use its own `"tpu_dist"`
    /// backend with the usual `torchrun` environment rendezvous.
    ///
    /// ## Example
    /// ```python
    /// dist.init_process_group("xla", init_method="xla://")
    /// ```
    ///
    /// Use instead (TorchTPU):
    /// ```python
    /// dist.init_process_group("tpu_dist")
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces `"xla"` with `"tpu_dist"` and removes `init_method="xla://"`. It is
    /// unsafe: the launcher must provide the environment rendezvous (`torchrun`).
    ///
    /// ## References
    /// - TorchTPU `torch_tpu/api/__init__.py` (registers the `tpu_dist` backend) and
    ///   `docs/notebooks/distributed_training_101.py` (`init_process_group(backend="tpu_dist")`), https://github.com/google-pytorch/torch_tpu
    pub(crate) static XLA_PROCESS_GROUP_ON_TORCHTPU = {
        code: "TPU707",
        name: "xla-process-group-on-torchtpu",
        severity: Error,
        fix: Sometimes,
        kinds: ["call"],
        tokens: ["init_process_group"],
        calls: ["torch.distributed.init_process_group"],
        check: check,
    }
}

/// TPU707
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if context.backend() != Backend::TorchTpu
        || helpers::call_matches(context, call, &["torch.distributed.init_process_group"]).is_none()
    {
        return;
    }
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    let source = context.source();
    let backend = tpu_api::string_argument(source, arguments, 0, "backend")
        .filter(|(_, value)| value == "xla");
    let init_method = tpu_api::string_argument(source, arguments, 1, "init_method")
        .filter(|(_, value)| value == "xla://");
    let Some(&(report_at, _)) = backend.as_ref().or(init_method.as_ref()) else {
        return;
    };
    let mut edits = Vec::new();
    if let Some((node, _)) = &backend {
        let quote = if context.text(*node).starts_with('\'') {
            '\''
        } else {
            '"'
        };
        edits.push(Edit::replace(
            node.byte_range(),
            format!("{quote}tpu_dist{quote}"),
        ));
    }
    if let Some((node, _)) = &init_method {
        // The keyword argument (or the positional value) goes with its comma.
        let argument = context
            .parent(*node)
            .filter(|parent| parent.is(kind::KEYWORD_ARGUMENT))
            .unwrap_or(*node);
        edits.push(crate::fix::edits::remove_argument(
            source, arguments, argument,
        ));
    }
    let fix = backend
        .is_some()
        .then(|| Fix::unsafe_edit("Use the `\"tpu_dist\"` backend", edits));
    context
        .report(
            report_at.byte_range(),
            "PyTorch/XLA's `xla` process group does not exist on TorchTPU; use `\"tpu_dist\"`",
        )
        .fix = fix;
}
