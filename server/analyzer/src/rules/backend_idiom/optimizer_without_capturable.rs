//! TPU608: Adam-family optimizer without `capturable=True` in a compiled TorchTPU step.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Fix;
use crate::rules::tpu_api;
use crate::semantic::Backend;
use crate::syntax::NodeExt;
use crate::syntax::{self, node_text};

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
    /// - pitfalls.md B.7 #80: TorchTPU `docs/notebooks/advanced_compile.py`
    /// - torchtpu.md A.4: "Stateful optimizers need `capturable=True` when the step is compiled"
    pub(crate) static OPTIMIZER_WITHOUT_CAPTURABLE = {
        code: "TPU608",
        name: "optimizer-without-capturable",
        severity: Error,
        fix: Always,
        kinds: ["call"],
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
            .is_some_and(|v| v.kind_name() == "true")
    {
        return;
    }
    if !compiles_optimizer_step(context) {
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

/// Whether the file compiles (decorator or `torch.compile(fn)`) a function that calls `.step()`.
fn compiles_optimizer_step(context: &Context<'_, '_>) -> bool {
    let source = context.source();
    let semantic = context.semantic();
    let mut stack = vec![context.root()];
    let mut visited = 0;
    while let Some(node) = stack.pop() {
        visited += 1;
        if visited > 20_000 {
            return false;
        }
        // A decorated function is judged at its `decorated_definition` (decorators + body).
        let (function, decorated) = match node.kind_name() {
            "decorated_definition" => {
                let mut cursor = node.walk();
                let decorated = node
                    .named_children(&mut cursor)
                    .filter(|c| c.kind_name() == "decorator")
                    .any(|d| node_text(d, source).contains("compile"));
                (
                    node.field("definition")
                        .filter(|d| d.kind_name() == "function_definition"),
                    decorated,
                )
            }
            "function_definition" => (Some(node), false),
            _ => (None, false),
        };
        if let Some(function) = function {
            let name = function
                .field("name")
                .map(|n| node_text(n, source))
                .unwrap_or("");
            let compiled = decorated || semantic.is_compiled_name(name);
            if compiled && node_text(function, source).contains(".step(") {
                return true;
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor).filter(|c| {
            matches!(
                c.kind_name(),
                "module"
                    | "block"
                    | "class_definition"
                    | "function_definition"
                    | "decorated_definition"
                    | "if_statement"
                    | "else_clause"
            )
        }));
    }
    false
}
