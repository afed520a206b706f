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
    /// - pitfalls.md B.7 #77: PyTorch/XLA `docs/source/perf/spmd_basic.md`
    /// - torchtpu.md A.6 and A.10: TorchTPU has no `mark_sharding` (DTensor / device mesh instead)
    pub(crate) static MARK_SHARDING_WITHOUT_SPMD = {
        code: "TPU703",
        name: "mark-sharding-without-spmd",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["mark_sharding"],
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
    if source.contains("use_spmd")
        || !source.contains("__name__")
        || source.contains("TestCase")
        || source.contains("unittest")
        || source.contains("pytest")
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
