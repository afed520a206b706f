//! TPU613: TorchTPU context managers and custom generators inside compiled functions.

use crate::kind;
use crate::word_list::{WordList, word_list};
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::semantic::Backend;
use crate::syntax::{self, NodeExt};

declare_rule! {
    /// ## What it does
    /// Checks, inside a function compiled with `torch.compile` (decorated, or passed to
    /// `torch.compile` in the same file), for
    /// - a TorchTPU context manager: `with torch.tpu.precision(...)`,
    ///   `torch_tpu._internal.precision.precision(...)`, or an execution-mode manager of
    ///   `torch_tpu._internal.execution_mode` (`eager_mode`, `set_eager_mode`, `defer_mode`,
    ///   `set_defer_mode`, `cpu_fallback_mode`);
    /// - in TorchTPU files, a random op given a custom `generator=`.
    ///
    /// ## Why is this bad?
    /// Dynamo cannot trace the opaque pybind11 calls behind TorchTPU's context managers: it
    /// abandons the whole frame and runs it eagerly — zero graphs captured — and with
    /// `fullgraph=True` raises `torch._dynamo.exc.Unsupported`. A custom `torch.Generator` has
    /// no proxy in the graph either: an expected graph break, after which the random op runs
    /// eagerly. PyTorch's own context managers (`torch.no_grad()`) compile cleanly.
    ///
    /// ## Example
    /// ```python
    /// @torch.compile(backend="tpu")
    /// def step(x):
    ///     with torch.tpu.precision(torch.tpu.Precision.HIGHEST):
    ///         return model(x)
    /// ```
    ///
    /// Use instead: enter the context manager outside the compiled function.
    /// ```python
    /// @torch.compile(backend="tpu")
    /// def step(x):
    ///     return model(x)
    ///
    /// with torch.tpu.precision(torch.tpu.Precision.HIGHEST):
    ///     out = step(x)
    /// ```
    /// and draw random numbers from the default (seeded) stream instead of a `generator=`.
    ///
    /// ## Fix safety
    /// No fix: moving a context manager changes what it covers.
    ///
    /// ## Known problems
    /// Functions compiled through a call chain (a compiled function calling this one) are not
    /// seen. Whether the public `torch.tpu.precision` alias breaks the graph exactly like the
    /// internal manager the tests use is inferred (same implementation), not verified.
    ///
    /// ## References
    /// - TorchTPU `tests/compile/context_manager_graph_break_test.py` and
    ///   `tests/compile/random_ops_test.py::test_explicit_generator_compile` (https://github.com/google-pytorch/torch_tpu; read in the
    ///   mirror https://github.com/jonathan1920/torch_tpu at commits 4f4507a and 079d742)
    pub(crate) static TORCHTPU_GRAPH_BREAK = {
        code: "TPU613",
        name: "torchtpu-graph-break-in-compiled-fn",
        severity: Warning,
        fix: None,
        kinds: ["with_statement", "keyword_argument"],
        check: check,
    }
}

const EXECUTION_MODE_MANAGERS: WordList = word_list![
    "eager_mode",
    "set_eager_mode",
    "defer_mode",
    "set_defer_mode",
    "cpu_fallback_mode",
];

/// TPU613
fn check<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    match node.kind_key() {
        kind::WITH_STATEMENT => check_with(context, node),
        _ => check_generator(context, node),
    }
}

fn check_with<'t>(context: &mut Context<'t, '_>, with: Node<'t>) {
    let Some(clause) = with.named_child(0).filter(|c| c.is(kind::WITH_CLAUSE)) else {
        return;
    };
    let items: Vec<Node<'t>> = clause.named_nodes().collect();
    for item in items {
        let Some(value) = item.field("value") else {
            continue;
        };
        let value = syntax::unparenthesize(value);
        let call = if value.is(kind::AS_PATTERN) {
            value.named_child(0)
        } else {
            Some(value)
        };
        let Some((function, _)) = call.and_then(|call| context.call_parts(call)) else {
            continue;
        };
        let Some(qualified) = context.qualified_name(function) else {
            continue;
        };
        if !is_torchtpu_manager(&qualified) || !in_compiled_function(context, with) {
            continue;
        }
        context.report(
            function.byte_range(),
            format!(
                "`{}` inside a compiled function makes Dynamo run the whole frame eagerly on TorchTPU",
                context.text(function)
            ),
        );
    }
}

fn is_torchtpu_manager(qualified: &str) -> bool {
    if matches!(
        qualified,
        "torch.tpu.precision" | "torch_tpu._internal.precision.precision"
    ) {
        return true;
    }
    qualified
        .strip_prefix("torch_tpu._internal.execution_mode.")
        .is_some_and(|rest| EXECUTION_MODE_MANAGERS.contains(&rest))
}

fn check_generator<'t>(context: &mut Context<'t, '_>, keyword: Node<'t>) {
    let Some(name) = keyword.field("name") else {
        return;
    };
    if !context.text_is(name, "generator") || context.backend() != Backend::TorchTpu {
        return;
    }
    let Some(value) = keyword.field("value") else {
        return;
    };
    if value.is(kind::NONE) {
        return;
    }
    let is_torch_call = context
        .parent(keyword)
        .and_then(|arguments| context.parent(arguments))
        .filter(|call| call.is(kind::CALL))
        .and_then(|call| context.semantic().call_qualified_name(call))
        .is_some_and(|q| q.starts_with("torch.") && !q.starts_with("torch.utils."));
    let is_method = context
        .parent(keyword)
        .and_then(|arguments| context.parent(arguments))
        .and_then(|call| context.method_call(call))
        .is_some_and(|(receiver, _)| context.fact(receiver).is_tensor());
    if !(is_torch_call || is_method) || !in_compiled_function(context, keyword) {
        return;
    }
    context.report(
        keyword.byte_range(),
        "A custom `generator=` in a compiled function is a graph break on TorchTPU; the op runs eagerly",
    );
}

/// Whether `node` is inside a function decorated with `torch.compile` (with or without
/// arguments) or passed to `torch.compile` in this file.
fn in_compiled_function<'t>(context: &Context<'t, '_>, node: Node<'t>) -> bool {
    let mut current = context.parent(node);
    while let Some(ancestor) = current {
        if ancestor.is(kind::FUNCTION_DEFINITION) {
            let name = ancestor
                .field("name")
                .map(|n| context.text(n))
                .unwrap_or("");
            if context.semantic().is_compiled_name(name) {
                return true;
            }
            let Some(decorated) = context
                .parent(ancestor)
                .filter(|p| p.is(kind::DECORATED_DEFINITION))
            else {
                return false;
            };
            return decorated
                .named_nodes()
                .filter(|child| child.is(kind::DECORATOR))
                .filter_map(|decorator| decorator.named_child(0))
                .any(|expression| {
                    let target = if expression.is(kind::CALL) {
                        expression.field("function").unwrap_or(expression)
                    } else {
                        expression
                    };
                    context.qualified_name(target).as_deref() == Some("torch.compile")
                });
        }
        current = context.parent(ancestor);
    }
    false
}
