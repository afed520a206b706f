//! TPU701: `init_process_group("nccl")` in code that runs on a TPU.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::fix::importer::Importer;
use crate::rules::{helpers, tpu_api};
use crate::semantic::Backend;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.distributed.init_process_group` called with the `"nccl"` backend.
    ///
    /// ## Why is this bad?
    /// NCCL is NVIDIA's collective library; a TPU VM has neither the GPUs nor the library, so the
    /// call raises. PyTorch/XLA registers the `"xla"` process-group backend (after
    /// `import torch_xla.distributed.xla_backend`, usually with `init_method="xla://"`); TorchTPU
    /// registers `"tpu_dist"`.
    ///
    /// ## Example
    /// ```python
    /// dist.init_process_group("nccl", rank=rank, world_size=world_size)
    /// ```
    ///
    /// Use instead (PyTorch/XLA):
    /// ```python
    /// import torch_xla.distributed.xla_backend
    ///
    /// dist.init_process_group("xla", init_method="xla://")
    /// ```
    /// or (TorchTPU) `dist.init_process_group(backend="tpu_dist")`.
    ///
    /// ## Fix safety
    /// When the file's backend is known, the fix replaces the backend string (and, for
    /// PyTorch/XLA, adds `import torch_xla.distributed.xla_backend`, which registers `"xla"`). It is
    /// unsafe: the program no longer runs on GPUs, and rendezvous arguments may need changing.
    ///
    /// ## Known problems
    /// Backends chosen at run time (`backend=args.backend`) are not reported, nor calls under a
    /// CUDA check.
    ///
    /// ## References
    /// - PyTorch/XLA `https://github.com/pytorch/xla/blob/master/docs/source/features/torch_distributed.md` and `https://github.com/pytorch/xla/blob/master/docs/source/perf/ddp.md`
    /// - TorchTPU `docs/notebooks/distributed_training_101.py` (https://github.com/google-pytorch/torch_tpu):
    ///   `dist.init_process_group(backend="tpu_dist")`
    pub(crate) static NCCL_BACKEND_ON_TPU = {
        code: "TPU701",
        name: "nccl-backend-on-tpu",
        severity: Error,
        fix: Sometimes,
        kinds: ["call"],
        tokens: ["init_process_group"],
        calls: ["torch.distributed.init_process_group"],
        check: check,
    }
}

/// TPU701
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if helpers::call_matches(context, call, &["torch.distributed.init_process_group"]).is_none() {
        return;
    }
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    let Some((value_node, value)) =
        tpu_api::string_argument(context.source(), arguments, 0, "backend")
    else {
        return;
    };
    if !value.split([',', ':']).any(|part| part.trim() == "nccl") {
        return;
    }
    if tpu_api::guarded_by_cuda_check(context, call) {
        return;
    }
    let quote = if context.text(value_node).starts_with('\'') {
        '\''
    } else {
        '"'
    };
    let fix = match context.backend() {
        Backend::TorchXla => {
            // Importing the module registers the "xla" backend with torch.distributed.
            let backend = Importer::new(context, value_node)
                .module("torch_xla.distributed.xla_backend", None);
            let mut edits = backend.edits();
            edits.push(Edit::replace(
                value_node.byte_range(),
                format!("{quote}xla{quote}"),
            ));
            Some(Fix::new(
                Applicability::Unsafe.min(backend.applicability),
                "Use the `\"xla\"` backend",
                edits,
            ))
        }
        Backend::TorchTpu => Some(Fix::unsafe_edit(
            "Use the `\"tpu_dist\"` backend",
            vec![Edit::replace(
                value_node.byte_range(),
                format!("{quote}tpu_dist{quote}"),
            )],
        )),
        Backend::Unknown => None,
    };
    let hint = match context.backend() {
        Backend::TorchXla => "; use \"xla\"",
        Backend::TorchTpu => "; use \"tpu_dist\"",
        Backend::Unknown => "; use \"xla\" (PyTorch/XLA) or \"tpu_dist\" (TorchTPU)",
    };
    context
        .report(
            value_node.byte_range(),
            format!("NCCL process group on a TPU{hint}"),
        )
        .fix = fix;
}
