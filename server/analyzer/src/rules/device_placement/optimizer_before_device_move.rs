//! TPU409: `model.to(device)` after an optimizer took `model.parameters()`.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Related;
use crate::syntax::{self, node_text};

declare_rule! {
    /// ## What it does
    /// Checks for a module moved to a device (`model.to(device)`) after an optimizer, or any
    /// other object that keeps its parameters (`torch.optim.AdamW(model.parameters())`,
    /// `EMA(model.parameters())`), was built from them in the same function, with no new one
    /// built after the move. When the function steps an optimizer, the step must come after
    /// the move (or in a loop around it): a move after training (to evaluate or export) is
    /// left alone.
    ///
    /// ## Why is this bad?
    /// Moving a module from the CPU to an XLA device does not move its parameters in place:
    /// `nn.Module.to` replaces each parameter with a new object when the two tensor types cannot
    /// share storage, as CPU and XLA tensors cannot. The optimizer still holds the old CPU
    /// parameters, which get no gradients: `optimizer.step()` changes nothing and the model
    /// silently does not train. On CUDA the same code works (CPU and CUDA parameters are updated
    /// in place), so the bug appears only when a script is ported. Measured on torch_xla 2.9.0
    /// (XLA CPU device): after `opt = SGD(model.parameters())` then `model.to(xla)`, the
    /// parameters are new objects, the optimizer's are still on the CPU with no gradient, and
    /// the weights do not change after `backward()` and `step()`; built after the move, they do.
    /// A move back after `model.cpu()` (to save a checkpoint) inside the loop does the same.
    ///
    /// ## Example
    /// ```python
    /// optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    /// model.to(device)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model.to(device)
    /// optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    /// ```
    ///
    /// ## Fix safety
    /// No fix is offered: the optimizer must be built after the move (or rebuilt), which may
    /// move other code with it.
    ///
    /// ## Known problems
    /// Only one function (or the module's top level) is read: an optimizer built in another
    /// function, or passed in, is not seen. Branches are not told apart. A move to a `"cuda"`
    /// device is left to the CUDA rules. TorchTPU was not measured; its tensors are not CPU
    /// tensors either.
    ///
    /// ## References
    /// - https://github.com/pytorch/xla/issues/1623 (an optimizer built before the model was
    ///   moved to the TPU: the model did not train)
    /// - https://pytorch.org/docs/stable/optim.html ("If you need to move a model to GPU via
    ///   `.cuda()`, please do so before constructing optimizers for it")
    /// - `scripts/measure-optimizer-before-move.py` (the measurement above)
    pub(crate) static OPTIMIZER_BEFORE_DEVICE_MOVE = {
        code: "TPU409",
        name: "optimizer-before-device-move",
        severity: Error,
        fix: None,
        kinds: ["call"],
        tokens: ["parameters"],
        calls: ["to"],
        check: check,
    }
}

/// TPU409
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some(kept) = context.semantic().parameters_kept_before_move(call) else {
        return;
    };
    // `model.to(device).train()` starts where its `.to` call does: only the `.to` call is the move.
    let Some((receiver, method)) = context.method_call(call) else {
        return;
    };
    if !context.text_is(method, "to") {
        return;
    }
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    // `.to("cuda")` runs only with CUDA, where the parameters move in place; the CUDA rules
    // report the device itself.
    let source = context.source();
    if syntax::positional_args(arguments)
        .first()
        .or(context.keyword_arg(arguments, "device").as_ref())
        .is_some_and(|device| {
            syntax::string_value(*device, source).is_some_and(|text| text.starts_with("cuda"))
        })
    {
        return;
    }
    let module = node_text(receiver, source);
    let message = format!(
        "`{module}` is moved to the device after an optimizer took its parameters: on XLA the move makes new parameters, and the optimizer keeps the old ones"
    );
    let diagnostic = context.report(call.byte_range(), message);
    diagnostic.related.push(Related {
        range: kept,
        message: format!("`{module}`'s parameters are kept here; build this after the move"),
    });
}
