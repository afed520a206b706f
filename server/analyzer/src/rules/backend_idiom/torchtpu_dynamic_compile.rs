//! TPU604: TorchTPU `torch.compile` without `dynamic=False`.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Edit, Fix};
use crate::rules::backend_idiom::compile_without_tpu_backend::CompileSite;
use crate::rules::tpu_api;
use crate::semantic::Backend;
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks, in files that target TorchTPU, for `torch.compile(...)` whose `dynamic` argument is
    /// missing or anything but `False`.
    ///
    /// ## Why is this bad?
    /// TorchTPU compiles static shapes only. `torch.compile(..., dynamic=True, backend="tpu")`
    /// raises; with the default `dynamic=None`, the first change of an input shape triggers
    /// PyTorch's automatic dynamic shapes, and TorchTPU raises an error asking for
    /// `torch.compile(..., dynamic=False, ...)`. With `dynamic=False` a new shape recompiles.
    ///
    /// ## Example
    /// ```python
    /// step = torch.compile(train_step, backend="tpu")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// step = torch.compile(train_step, backend="tpu", dynamic=False)
    /// ```
    ///
    /// ## Fix safety
    /// The fix sets `dynamic=False`. It is unsafe: every new input shape now compiles a new graph,
    /// so inputs should be padded or bucketed to few shapes.
    ///
    /// ## References
    /// - TorchTPU `tests/compile/ensure_no_dynamic_test.py` and `docs/notebooks/advanced_compile.py`
    ///   (https://github.com/google-pytorch/torch_tpu): `dynamic=True` raises; `dynamic=False` recompiles on a new shape
    pub(crate) static TORCHTPU_DYNAMIC_COMPILE = {
        code: "TPU604",
        name: "torchtpu-dynamic-compile",
        severity: Error,
        fix: Always,
        kinds: ["call", "decorator"],
        tokens: ["compile"],
        calls: ["torch.compile"],
        check: check,
    }
}

/// TPU604
fn check<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    if context.backend() != Backend::TorchTpu {
        return;
    }
    let Some(site) = CompileSite::find(context, node) else {
        return;
    };
    match site.arguments {
        Some(arguments) => {
            if syntax::has_splat(arguments) {
                return;
            }
            match context.keyword_arg(arguments, "dynamic") {
                None => {
                    let edit = tpu_api::insert_argument(arguments, "dynamic=False");
                    context
                        .report(
                            site.callee.byte_range(),
                            "TorchTPU `torch.compile` without `dynamic=False` raises when an input shape changes",
                        )
                        .fix = Some(Fix::unsafe_edit("Add `dynamic=False`", vec![edit]));
                }
                Some(value) if value.is_not(kind::FALSE) => {
                    let message = if value.is(kind::TRUE) {
                        "TorchTPU `torch.compile` raises with `dynamic=True`".to_string()
                    } else {
                        format!(
                            "TorchTPU `torch.compile` needs `dynamic=False`, not `{}`",
                            context.text(value)
                        )
                    };
                    context.report(value.byte_range(), message).fix = Some(Fix::unsafe_edit(
                        "Use `dynamic=False`",
                        vec![Edit::replace(value.byte_range(), "False")],
                    ));
                }
                Some(_) => {}
            }
        }
        None => {
            let edit = Edit::insert(site.callee.end_byte(), "(dynamic=False)");
            context
                .report(
                    site.callee.byte_range(),
                    "TorchTPU `torch.compile` without `dynamic=False` raises when an input shape changes",
                )
                .fix = Some(Fix::unsafe_edit("Add `dynamic=False`", vec![edit]));
        }
    }
}
