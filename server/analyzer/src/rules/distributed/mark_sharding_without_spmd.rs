//! TPU703: `xs.mark_sharding` in a script that never enables SPMD.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::semantic::Backend;

declare_rule! {
    /// ## What it does
    /// Checks, in PyTorch/XLA scripts (files with an `if __name__ == "__main__":` block), for
    /// `xs.mark_sharding(...)` when the file never calls `xr.use_spmd()`. It reports the first
    /// call only.
    ///
    /// ## Why is this bad?
    /// Sharding annotations take effect only in SPMD mode, which `torch_xla.runtime.use_spmd()`
    /// must enable before any tensor is created on the device. Without it the program runs in
    /// the default multi-process mode and the annotations do not partition anything.
    ///
    /// ## Example
    /// ```python
    /// mesh = xs.Mesh(device_ids, (num_devices, 1), ("data", "model"))
    /// xs.mark_sharding(batch, mesh, ("data", None))
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// import torch_xla.runtime as xr
    ///
    /// xr.use_spmd()
    /// mesh = xs.Mesh(device_ids, (num_devices, 1), ("data", "model"))
    /// xs.mark_sharding(batch, mesh, ("data", None))
    /// ```
    ///
    /// ## Known problems
    /// Library modules (no `__main__` block) and test files are not checked: SPMD is usually
    /// enabled by whoever imports them.
    ///
    /// ## References
    /// - PyTorch/XLA, *SPMD basics* (https://github.com/pytorch/xla/blob/master/docs/source/perf/spmd_basic.md): `xr.use_spmd()` before `mark_sharding`
    /// - TorchTPU `torch_tpu/_internal/distributed/device_mesh.py` (https://github.com/google-pytorch/torch_tpu): DTensor and device meshes,
    ///   no `mark_sharding`
    pub(crate) static MARK_SHARDING_WITHOUT_SPMD = {
        code: "TPU703",
        name: "mark-sharding-without-spmd",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["mark_sharding"],
        calls: ["mark_sharding"],
        check: check,
    }
}

/// TPU703
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((function, _)) = context.call_parts(call) else {
        return;
    };
    let Some(qualified) = context.qualified_name(function) else {
        return;
    };
    if !(qualified.starts_with("torch_xla.") && qualified.ends_with(".mark_sharding")) {
        return;
    }
    if context.backend() == Backend::TorchTpu {
        return;
    }
    let source = context.source();
    if context.source_mentions("use_spmd")
        || !context.source_mentions("__name__")
        || context.source_mentions("TestCase")
        || context.source_mentions("unittest")
        || context.source_mentions("pytest")
    {
        return;
    }
    // First call only.
    if source[..call.start_byte()].contains("mark_sharding(") {
        return;
    }
    context.report(
        function.byte_range(),
        "`mark_sharding` without `xr.use_spmd()`: the script never enables SPMD",
    );
}
