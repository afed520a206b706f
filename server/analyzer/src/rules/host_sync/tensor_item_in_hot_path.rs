//! TPU101: `.item()` on a tensor in a hot path.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::{helpers, tensor_values};

declare_rule! {
    /// ## What it does
    /// Checks for `.item()` on a tensor inside a hot path: a training loop, a step function,
    /// `forward`, or a compiled function.
    ///
    /// ## Why is this bad?
    /// On a TPU, tensors are computed asynchronously (PyTorch/XLA records a lazy graph; TorchTPU
    /// dispatches or fuses ops ahead of the host). `.item()` makes the host wait until the value
    /// is computed and copied back: the graph is cut and executed early, the device idles while
    /// the host catches up, and under `torch.compile` it is a graph break. PyTorch/XLA's
    /// troubleshooting guide lists `item()` first among known performance caveats, and users
    /// report training running about 100 times slower because of one `loss.item()` per step.
    ///
    /// ## Example
    /// ```python
    /// for inputs, labels in loader:
    ///     loss = criterion(model(inputs), labels)
    ///     loss.backward()
    ///     optimizer.step()
    ///     running_loss += loss.item()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for step, (inputs, labels) in enumerate(loader):
    ///     loss = criterion(model(inputs), labels)
    ///     loss.backward()
    ///     optimizer.step()
    ///     running_loss += loss.detach()  # stays on the device
    ///     if step % log_every == 0:
    ///         print(running_loss.item() / (step + 1))
    /// ```
    /// With PyTorch/XLA, `xm.add_step_closure(log_fn, args=(loss,))` runs the logging after the
    /// step's graph has executed.
    ///
    /// An input check (`if task_ids.max().item() >= n_tasks: raise ValueError(…)`,
    /// `assert lengths.max().item() <= slen`) is reported the same way, as a warning: its test
    /// runs on every step whether or not it raises, so the host waits just as long. The message
    /// says the sync only feeds a check that raises, since the fix there is to drop the check from the
    /// step, run it once on the host data before moving it, or make it opt-in (torchmetrics'
    /// `validate_args=False`; `python -O` drops `assert`s).
    ///
    /// ## Known problems
    /// A receiver whose type the index cannot see is taken to be a tensor when the file imports
    /// torch; NumPy arrays and scalars that the index recognises are never flagged. Outside hot
    /// paths, a call that repeats with a loop of its function (or of module-level code) that is
    /// not an epoch loop and that no throttle guards is reported at information severity, and
    /// only on a receiver the index is sure is a device tensor (a script's or a reproducer's
    /// loop over `range(n)`), and so is a call in straight-line module-level code ahead of a step
    /// marker written later at module level (`xm.mark_step()` / `torch_xla.sync()`: the value is
    /// needed before the marker, so the pending graph runs early as an execution of its own); a
    /// call that runs once otherwise (after training, per epoch) is not reported.
    ///
    /// ## References
    /// - PyTorch/XLA, *Troubleshooting — Known Performance Caveats* (`docs/source/learn/troubleshoot.md`)
    /// - PyTorch/XLA issue #2120 (`.item()` makes training ~100x slower)
    /// - TorchTPU, *Deferred execution* notebook: `.item()` is a materialization and a graph break
    pub(crate) static TENSOR_ITEM_IN_HOT_PATH = {
        code: "TPU101",
        name: "tensor-item-in-hot-path",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["item"],
        calls: ["item"],
        check: check,
    }
}

/// TPU101
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((receiver, method)) = context.method_call(call) else {
        return;
    };
    if !context.text_is(method, "item") {
        return;
    }
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    if arguments.named_child_count() != 0 {
        return;
    }
    // An error message (`assert t0 + dt > t0, f"underflow in dt {dt.item()}"`) is built at most
    // once; the assertion's test is what runs every step.
    if tensor_values::in_error_or_throttled_path(context, call) {
        return;
    }
    let Some((severity, place)) = context.host_value_read() else {
        return;
    };
    // On a hot path a receiver of unknown type is taken to be a tensor (the file imports torch);
    // in a plain loop, only a tensor the index is sure of, as for the other host reads there.
    let on_hot_path = context.hot_path().is_some();
    let is_device_tensor = if on_hot_path {
        helpers::is_probably_device_tensor(context, receiver)
    } else {
        tensor_values::is_confident_tensor(context, receiver)
    };
    if !is_device_tensor {
        return;
    }
    let receiver_text = context.text(receiver);
    let how_often = context.host_read_frequency();
    let message = format!(
        "`{}.item()` {place} waits for the device {how_often}{}",
        helpers::short_code(receiver_text),
        helpers::raising_check_hint(context, call)
    );
    context.report(call.byte_range(), message).severity = severity;
}
