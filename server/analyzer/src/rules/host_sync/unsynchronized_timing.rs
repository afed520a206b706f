//! TPU111: wall-clock timing of PyTorch/XLA work whose only barrier does not wait.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::tensor_values;
use crate::semantic::Backend;
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// In PyTorch/XLA code, checks for elapsed-time measurements (`time.time() - start`,
    /// `time.perf_counter() - t0`, …) where the code between the two clock reads cuts the graph
    /// with `torch_xla.sync()` or `xm.mark_step()` but never waits for the device:
    /// no `torch_xla.sync(wait=True)`, no `xm.wait_device_ops()`, and no value read back
    /// (`.item()`, `.cpu()`, `.tolist()`, `.numpy()`, `print`).
    ///
    /// ## Why is this bad?
    /// `torch_xla.sync()` only hands the graph to the runtime and returns; compilation and
    /// execution happen asynchronously. The measured time is the time to *trace* the step, not
    /// to run it, so benchmarks look far faster than they are. PyTorch/XLA's trace-vs-execution
    /// guide measures with a warm-up and `torch_xla.sync(wait=True)` before reading the clock.
    ///
    /// ## Example
    /// ```python
    /// start = time.perf_counter()
    /// loss = train_step(batch)
    /// torch_xla.sync()
    /// elapsed = time.perf_counter() - start
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// start = time.perf_counter()
    /// loss = train_step(batch)
    /// torch_xla.sync(wait=True)
    /// elapsed = time.perf_counter() - start
    /// ```
    ///
    /// ## Known problems
    /// Only files that use PyTorch/XLA are checked, and only a start time bound in the same
    /// function (`start = time.time()`). Timing with no barrier at all is not reported: without
    /// one the index cannot tell whether the interval holds XLA work.
    ///
    /// ## References
    /// - PyTorch/XLA, *Trace vs. execution time* (`docs/source/learn/trace-vs-execution-time.md`)
    /// - PyTorch/XLA, `torch_xla.sync(wait=...)` and `xm.wait_device_ops()` (`torch_xla/core/xla_model.py`)
    pub(crate) static UNSYNCHRONIZED_TIMING = {
        code: "TPU111",
        name: "unsynchronized-timing",
        severity: Warning,
        fix: None,
        kinds: ["binary_operator"],
        tokens: ["time"],
        check: check,
    }
}

const CLOCKS: &[&str] = &[
    "time.time",
    "time.perf_counter",
    "time.monotonic",
    "time.time_ns",
    "time.perf_counter_ns",
    "time.monotonic_ns",
];

/// Text that shows the interval waits for the device.
const WAITS: &[&str] = &[
    "wait=True",
    "wait_device_ops(",
    ".item()",
    ".cpu()",
    ".tolist()",
    ".numpy()",
    "print(",
    "synchronize(",
];

/// TPU111
fn check<'t>(context: &mut Context<'t, '_>, operator: Node<'t>) {
    let is_minus = operator
        .field("operator")
        .is_some_and(|op| context.text_is(op, "-"));
    if !is_minus || context.backend() != Backend::TorchXla {
        return;
    }
    let (Some(left), Some(right)) = (operator.field("left"), operator.field("right")) else {
        return;
    };
    if !is_clock_read(context, left) || right.is_not_kind("identifier") {
        return;
    }
    let Some(start) = tensor_values::last_assignment_value(context, context.text(right), right)
    else {
        return;
    };
    if !is_clock_read(context, start) {
        return;
    }
    let Some(interval) = context
        .source()
        .get(start.end_byte()..operator.start_byte())
    else {
        return;
    };
    let cuts_graph = interval.contains("torch_xla.sync(") || interval.contains("mark_step(");
    if !cuts_graph || WAITS.iter().any(|wait| interval.contains(wait)) {
        return;
    }
    context.report(
        operator.byte_range(),
        "Timing ends after a barrier that does not wait (`torch_xla.sync()` / `mark_step()`): this measures tracing, not execution",
    );
}

fn is_clock_read<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    let expr = syntax::unparenthesize(expr);
    context
        .semantic()
        .call_qualified_name(expr)
        .is_some_and(|name| CLOCKS.contains(&name.as_str()))
        && context
            .call_parts(expr)
            .is_some_and(|(_, arguments)| arguments.named_child_count() == 0)
}
