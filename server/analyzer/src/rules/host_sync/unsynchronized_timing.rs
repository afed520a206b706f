//! TPU111: wall-clock timing of PyTorch/XLA work whose only barrier does not wait.

use crate::kind;
use crate::word_list::{WordList, word_list};
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::tensor_values;
use crate::semantic::{Backend, Device, ValueKind};
use crate::syntax;
use crate::syntax::{NodeExt, Visit};

declare_rule! {
    /// ## What it does
    /// In PyTorch/XLA code, checks for elapsed-time measurements (`time.time() - start`,
    /// `time.perf_counter() - t0`, …) where the code between the two clock reads cuts the graph
    /// with `torch_xla.sync()` or `xm.mark_step()`, calls a function compiled with
    /// `torch_xla.compile` (which cuts it before and after), iterates an `MpDeviceLoader` (which cuts
    /// it at every batch), or calls a function of the file that cuts it (`generate()` with a
    /// `torch_xla.sync()` per token), but never waits for the device:
    /// no `torch_xla.sync(wait=True)`, no `xm.wait_device_ops()`, and no value read back
    /// (`.item()`, `.cpu()`, `.tolist()`, `.numpy()`, `print`). A read inside a closure given to
    /// `xm.add_step_closure` is no wait there (it runs after a later barrier, and only on the
    /// steps that register it), and neither is `torch.cuda.synchronize()`, which waits for a
    /// CUDA device.
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
    /// one the index cannot tell whether the interval holds XLA work. A called function of the
    /// file counts as a barrier when it (or a function of the file it calls) syncs and none of
    /// the functions it reaches waits (reads a value back, prints, `xm.wait_device_ops()`,
    /// `torch_xla.sync(wait=True)`); functions are joined by name, methods only through `self`.
    ///
    /// ## References
    /// - PyTorch/XLA, *Trace vs. execution time* (`docs/source/learn/trace-vs-execution-time.md`)
    /// - PyTorch/XLA, `torch_xla.sync(wait=...)` and `xm.wait_device_ops()` (`torch_xla/core/xla_model.py`)
    /// - PyTorch/XLA, `xm.add_step_closure` docstring (closures run after the barrier) and `ParallelLoader` (`torch_xla/distributed/parallel_loader.py`: each batch marks the step)
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

const CLOCKS: WordList = word_list![
    "time.time",
    "time.perf_counter",
    "time.monotonic",
    "time.time_ns",
    "time.perf_counter_ns",
    "time.monotonic_ns",
];

/// Text that shows the interval waits for the device.
const WAITS: WordList = word_list![
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
    if !is_clock_read(context, left) || right.is_not(kind::IDENTIFIER) {
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
    let lower = start.end_byte();
    let upper = operator.start_byte();
    let scope = context
        .enclosing(operator, &["function_definition"])
        .unwrap_or_else(|| context.root());
    let statements = interval_statements(context, scope, lower, upper);
    // The barrier the message names: the first kind found, in the order users write them.
    let barrier = if interval.contains("torch_xla.sync(") {
        Some("`torch_xla.sync()`".to_string())
    } else if interval.contains("mark_step(") {
        Some("`mark_step()`".to_string())
    } else if statements.runs_compiled_step {
        Some("a `torch_xla.compile`d step".to_string())
    } else if statements.loops_over_device_loader {
        Some("a device loader's batches".to_string())
    } else {
        statements
            .runs_syncing_function
            .map(|name| format!("`{name}()`, which syncs"))
    };
    // What runs in the interval itself: a step closure's body runs only when the runtime runs
    // it, and `torch.cuda.synchronize()` waits for a CUDA device, not the XLA one.
    // The deferred ranges' characters become spaces, byte for byte (built as text: no lossy
    // decoding of blanked bytes is linked into the WebAssembly module for this).
    let mut running = String::with_capacity(interval.len());
    for (offset, character) in interval.char_indices() {
        let at = lower + offset;
        if statements
            .deferred
            .iter()
            .any(|&(from, to)| from <= at && at < to)
        {
            for _ in 0..character.len_utf8() {
                running.push(' ');
            }
        } else {
            running.push(character);
        }
    }
    let running = running.replace("cuda.synchronize(", "");
    let Some(barrier) = barrier else {
        return;
    };
    if WAITS.iter().any(|wait| running.contains(wait)) {
        return;
    }
    context.report(
        operator.byte_range(),
        format!(
            "Timing ends after a barrier that does not wait ({barrier}): this measures tracing, not execution"
        ),
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

/// What the code between the two clock reads does, beyond its text.
struct IntervalStatements<'t> {
    /// A loop over a device loader (`MpDeviceLoader`, `ParallelLoader`): each batch it yields
    /// cuts the graph like `torch_xla.sync()`, and waits no more than it does.
    loops_over_device_loader: bool,
    /// A call of a function compiled with `torch_xla.compile` (`step_fn = torch_xla.compile(step)`;
    /// `step_fn(batch)`): it cuts the graph before and after the function runs, and returns
    /// before the device has run it.
    runs_compiled_step: bool,
    /// A call of a function of this file that cuts the graph and returns without waiting
    /// (`codes = generate(lm, cond, steps)`, whose decode loop runs `torch_xla.sync()` per
    /// token): its name.
    runs_syncing_function: Option<&'t str>,
    /// Byte ranges that do not run before the clock is read: `xm.add_step_closure(...)` calls
    /// (their closures run after a later barrier, on the steps that register one) and the
    /// callee of a call around the clock read.
    deferred: Vec<(usize, usize)>,
}

fn interval_statements<'t>(
    context: &Context<'t, '_>,
    scope: Node<'t>,
    lower: usize,
    upper: usize,
) -> IntervalStatements<'t> {
    let mut found = IntervalStatements {
        loops_over_device_loader: false,
        runs_compiled_step: false,
        runs_syncing_function: None,
        deferred: Vec::new(),
    };
    syntax::any_in_subtree(scope, usize::MAX, |node| {
        if node.end_byte() <= lower || node.start_byte() >= upper {
            return Visit::Skip;
        }
        let inside = node.start_byte() >= lower && node.end_byte() <= upper;
        // `xm.master_print(f"{time.time() - t0}")`: a call around the clock read has not run
        // yet when the time is taken (its arguments before the read have).
        if node.end_byte() > upper
            && node.is(kind::CALL)
            && let Some((function, _)) = context.call_parts(node)
            && function.start_byte() >= lower
            && function.end_byte() <= upper
        {
            found
                .deferred
                .push((function.start_byte(), function.end_byte()));
        }
        if inside && node.is(kind::CALL) {
            let closure = context
                .call_parts(node)
                .is_some_and(|(function, _)| context.text(function).ends_with("add_step_closure"));
            if closure {
                found.deferred.push((node.start_byte(), node.end_byte()));
                return Visit::Skip;
            }
        }
        if inside && node.is(kind::CALL) && !found.runs_compiled_step {
            found.runs_compiled_step = calls_xla_compiled(context, node);
        }
        if inside && node.is(kind::CALL) && found.runs_syncing_function.is_none() {
            found.runs_syncing_function = context.semantic().call_syncs_without_waiting(node);
        }
        if inside
            && node.is(kind::FOR_STATEMENT)
            && node
                .field("right")
                .is_some_and(|iterable| is_device_loader(context, iterable))
        {
            found.loops_over_device_loader = true;
        }
        Visit::Enter
    });
    found
}

/// Whether `call` calls a name last bound to `torch_xla.compile(f, ...)` in its function.
fn calls_xla_compiled<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let Some((function, _)) = context.call_parts(call) else {
        return false;
    };
    if function.is_not(kind::IDENTIFIER) {
        return false;
    }
    tensor_values::last_assignment_value(context, context.text(function), function).is_some_and(
        |bound| {
            context
                .semantic()
                .call_qualified_name(syntax::unparenthesize(bound))
                .is_some_and(|name| name == "torch_xla.compile")
        },
    )
}

/// `device_loader`, `enumerate(device_loader)`, `tqdm(device_loader)` of a loader that places
/// its batches on the device.
fn is_device_loader<'t>(context: &Context<'t, '_>, iterable: Node<'t>) -> bool {
    let iterable = syntax::unparenthesize(iterable);
    let loader = context
        .call_parts(iterable)
        .filter(|(function, _)| context.text(*function) == "enumerate")
        .and_then(|(_, arguments)| syntax::positional_args(arguments).first().copied())
        .unwrap_or(iterable);
    let fact = context.fact(loader);
    fact.kind == ValueKind::DataLoader && fact.device == Device::Accelerator
}
