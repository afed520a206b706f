//! TPU608: Adam-family optimizer without `capturable=True` in a compiled TorchTPU step.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Fix;
use crate::rules::tpu_api;
use crate::semantic::Backend;
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks, in TorchTPU files that compile a function calling `optimizer.step()`, for
    /// stateful optimizers (`Adam`, `AdamW`, `Adamax`, `ASGD`, `NAdam`, `RAdam`, `RMSprop`,
    /// `Rprop`) created without `capturable=True`.
    ///
    /// ## Why is this bad?
    /// These optimizers keep their step counters on the CPU unless `capturable=True`. When the
    /// optimizer step is compiled for the TPU, the CPU state cannot be captured and the step
    /// crashes ("crashing as CPU tensors"). TorchTPU's compile guide says you must pass
    /// `capturable=True` for exactly this list.
    ///
    /// ## Example
    /// ```python
    /// optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ///
    /// @torch.compile(backend="tpu", dynamic=False)
    /// def train_step(x, y):
    ///     loss = loss_fn(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, capturable=True)
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `capturable=True`. It is unsafe: the optimizer state moves to the device
    /// and checkpoints of it change accordingly.
    ///
    /// ## References
    /// - TorchTPU `docs/notebooks/advanced_compile.py` (https://github.com/google-pytorch/torch_tpu): "Stateful optimizers need
    ///   `capturable=True` when the step is compiled"
    pub(crate) static OPTIMIZER_WITHOUT_CAPTURABLE = {
        code: "TPU608",
        name: "optimizer-without-capturable",
        severity: Error,
        fix: Always,
        kinds: ["call"],
        tokens: ["optim"],
        calls: STATEFUL,
        check: check,
    }
}

const STATEFUL: &[&str] = &[
    "Adam", "AdamW", "Adamax", "ASGD", "NAdam", "RAdam", "RMSprop", "Rprop",
];

/// TPU608
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if context.backend() != Backend::TorchTpu {
        return;
    }
    let Some(qualified) = context.semantic().call_qualified_name(call) else {
        return;
    };
    let Some(name) = qualified.strip_prefix("torch.optim.") else {
        return;
    };
    let name = name.rsplit('.').next().unwrap_or(name);
    if !STATEFUL.contains(&name) {
        return;
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    if syntax::has_splat(arguments)
        || context
            .keyword_arg(arguments, "capturable")
            .is_some_and(|v| v.is(kind::TRUE))
    {
        return;
    }
    // A compiled function of the file steps an optimizer (the index's function summaries).
    if !context.semantic().file_facts().compiles_optimizer_step {
        return;
    }
    let fix = match context.keyword_arg(arguments, "capturable") {
        Some(value) => Fix::unsafe_edit(
            "Set `capturable=True`",
            vec![crate::diagnostic::Edit::replace(value.byte_range(), "True")],
        ),
        None => Fix::unsafe_edit(
            "Add `capturable=True`",
            vec![tpu_api::insert_argument(arguments, "capturable=True")],
        ),
    };
    context
        .report(
            function.start_byte()..call.end_byte(),
            format!("`{name}` without `capturable=True` crashes in a compiled TorchTPU step"),
        )
        .fix = Some(fix);
}
