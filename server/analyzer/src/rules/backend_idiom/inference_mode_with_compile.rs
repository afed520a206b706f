//! TPU609: `torch.inference_mode()` around compiled code under TorchTPU.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Edit, Fix};
use crate::semantic::{Backend, HotPath};
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks, in TorchTPU files, for `@torch.inference_mode()` on a function that is also
    /// compiled with `torch.compile` or that calls a compiled function of the file
    /// (`step = torch.compile(self.step)` then `step(...)` in a `generate` loop) or a name bound
    /// to `torch.compile(...)` in the function or earlier at module level (`compiled =
    /// torch.compile(model, backend="tpu")` then `compiled(ids)` in a decode loop), and for
    /// `with torch.inference_mode():` inside a compiled function.
    ///
    /// ## Why is this bad?
    /// TorchTPU's error glossary lists `torch.inference_mode()` combined with `torch.compile` as a
    /// crash (a PyTorch issue, pytorch/pytorch#169477, that also fails on CPU) and prescribes
    /// `torch.no_grad()` instead, which gives the same gradient-free execution.
    ///
    /// ## Example
    /// ```python
    /// @torch.inference_mode()
    /// @torch.compile(backend="tpu", dynamic=False)
    /// def predict(x):
    ///     return model(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// @torch.no_grad()
    /// @torch.compile(backend="tpu", dynamic=False)
    /// def predict(x):
    ///     return model(x)
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces `inference_mode` with `no_grad`. It is unsafe: tensors created under
    /// `no_grad` are ordinary tensors, not inference tensors, so later in-place updates that
    /// inference mode would have rejected are now allowed.
    ///
    /// ## References
    /// - TorchTPU `docs/notebooks/error_glossary.py` (https://github.com/google-pytorch/torch_tpu): "`@torch.inference_mode()` +
    ///   `torch.compile` crashes → use `@torch.no_grad()`"
    /// - https://github.com/pytorch/pytorch/issues/169477
    /// - Hugging Face's pipelines and Lightning run compiled models under `no_grad` rather
    ///   than `inference_mode` for this reason (transformers#25124, Lightning#17215)
    pub(crate) static INFERENCE_MODE_WITH_COMPILE = {
        code: "TPU609",
        name: "inference-mode-with-compile",
        severity: Error,
        fix: Always,
        kinds: ["decorator", "with_item"],
        tokens: ["inference_mode"],
        check: check,
    }
}

/// TPU609
fn check<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    if context.backend() != Backend::TorchTpu {
        return;
    }
    let Some(expression) = node.named_child(0) else {
        return;
    };
    let callee = if expression.is(kind::CALL) {
        match context.call_parts(expression) {
            Some((function, _)) => function,
            None => return,
        }
    } else {
        expression
    };
    if context.qualified_name(callee).as_deref() != Some("torch.inference_mode") {
        return;
    }
    let applies = match node.kind_key() {
        kind::DECORATOR => decorates_compiled_function(context, node),
        _ => context.hot_path() == Some(HotPath::Compiled),
    };
    if !applies {
        return;
    }
    let Some(attribute) = callee.field("attribute").or(Some(callee)) else {
        return;
    };
    context
        .report(
            expression.byte_range(),
            "`torch.inference_mode()` with `torch.compile` crashes on TorchTPU; use `torch.no_grad()`",
        )
        .fix = Some(Fix::unsafe_edit(
        "Replace with `no_grad`",
        vec![Edit::replace(
            attribute.byte_range(),
            if attribute.is(kind::IDENTIFIER) && callee.is(kind::IDENTIFIER) {
                // `from torch import inference_mode`: keep the spelling local.
                "torch.no_grad"
            } else {
                "no_grad"
            },
        )],
    ));
}

/// Whether the decorated function is compiled (`@torch.compile` beside this decorator, or passed
/// to `torch.compile` elsewhere), or calls a compiled function of the file, from the index's
/// function summaries.
fn decorates_compiled_function<'t>(context: &Context<'t, '_>, decorator: Node<'t>) -> bool {
    let semantic = context.semantic();
    let Some(definition) = context
        .parent(decorator)
        .filter(|p| p.is(kind::DECORATED_DEFINITION))
        .and_then(|decorated| decorated.field("definition"))
    else {
        return false;
    };
    let Some(summary) = semantic.function_summary(definition) else {
        return false;
    };
    if summary.compiled || semantic.calls_compiled_function(summary) {
        return true;
    }
    // A call of a name bound to `torch.compile(...)`, in the function itself or earlier at
    // module level (`compiled = torch.compile(model, backend="tpu")`, then `compiled(ids)` in
    // the decode loop): the compiled module runs under inference mode.
    summary.calls.iter().any(|callee| {
        [
            (Some(definition), definition.end_byte()),
            (None, decorator.start_byte()),
        ]
        .into_iter()
        .any(|(scope, before)| {
            semantic
                .last_assignment_before(scope, callee, before)
                .is_some_and(|value| {
                    semantic
                        .call_qualified_name(crate::syntax::unparenthesize(value))
                        .as_deref()
                        == Some("torch.compile")
                })
        })
    })
}
