//! TPU309: a tensor factory sized by the shape of a data-dependent result (`torch.rand(idx.size(0))`).

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::tensor_values;
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for tensor factories (`torch.zeros`, `torch.ones`, `torch.empty`, `torch.full`,
    /// `torch.rand`, `torch.randn`, `torch.randint`, `torch.arange`) whose size is read from the
    /// shape of a data-dependent result: the output of `nonzero`, `unique`, `masked_select`,
    /// one-argument `torch.where`, boolean-mask indexing, or `repeat_interleave` without
    /// `output_size=` — directly (`torch.rand(idx.size(0))`) or through a local name
    /// (`n = idx.shape[0]`; `torch.zeros(n)`).
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA's recompilation notes explain that querying a dynamic dimension forces the
    /// data-dependent tensor to be evaluated (a host sync), and the Python int it returns becomes
    /// a new source of dynamism: every distinct value gives the new tensor, and everything
    /// computed from it, a new shape and a new graph.
    ///
    /// ## Example
    /// ```python
    /// idx = torch.nonzero(mask).squeeze(1)
    /// noise = torch.randn(idx.size(0), dim, device=x.device)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// noise = torch.randn(mask.shape[0], dim, device=x.device)  # static size
    /// noise = noise * mask[:, None]                             # keep the mask, not the indices
    /// ```
    ///
    /// ## Known problems
    /// Names are followed through one local assignment within a function. Outside hot paths the
    /// finding is informational.
    ///
    /// ## References
    /// - PyTorch/XLA, *Source of recompilations* §2.2 (`docs/source/notes/source_of_recompilation.md`)
    /// - TorchTPU, `advanced_compile.py` ("changes to shapes … require recompilations")
    pub(crate) static SIZE_FROM_DYNAMIC_OP = {
        code: "TPU309",
        name: "size-from-dynamic-op",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        calls: FACTORIES,
        check: check,
    }
}

const FACTORIES: &[&str] = &[
    "torch.zeros",
    "torch.ones",
    "torch.empty",
    "torch.full",
    "torch.rand",
    "torch.randn",
    "torch.randint",
    "torch.arange",
];

/// TPU309
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    let Some(factory) = context.qualified_name(function) else {
        return;
    };
    if !FACTORIES.contains(&factory.as_str()) {
        return;
    }
    let mut sizes = syntax::positional_args(arguments);
    if factory == "torch.full" {
        sizes.truncate(1);
    }
    sizes.extend(context.keyword_arg(arguments, "size"));
    let Some(operation) = sizes
        .into_iter()
        .find_map(|size| dynamic_size_source(context, size, 0))
    else {
        return;
    };
    let severity = context.hot_path_severity();
    let message = format!(
        "`{factory}` sized by the shape of a `{operation}` result: a host sync, and a new shape per value"
    );
    context.report(call.byte_range(), message).severity = severity;
}

/// The data-dependent operation whose shape `size` reads, if any.
fn dynamic_size_source<'t>(
    context: &Context<'t, '_>,
    size: Node<'t>,
    depth: usize,
) -> Option<String> {
    if depth > 4 {
        return None;
    }
    let size = syntax::unparenthesize(size);
    match size.kind_key() {
        kind::IDENTIFIER => {
            let value = tensor_values::last_assignment_value(context, context.text(size), size)?;
            if value.start_byte() == size.start_byte() {
                return None;
            }
            shape_read(context, value)
        }
        kind::BINARY_OPERATOR | kind::TUPLE | kind::LIST => {
            let parts: Vec<Node<'_>> = size.named_nodes().collect();
            parts
                .into_iter()
                .find_map(|part| dynamic_size_source(context, part, depth + 1))
        }
        _ => shape_read(context, size),
    }
}

/// `t.size(0)`, `t.shape[0]`, `t.shape`, `len(t)`, `t.numel()` of a data-dependent `t`.
fn shape_read<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> Option<String> {
    let expr = syntax::unparenthesize(expr);
    let measured = match expr.kind_key() {
        kind::CALL => {
            let (function, arguments) = context.call_parts(expr)?;
            if function.is(kind::IDENTIFIER) && context.text_is(function, "len") {
                syntax::positional_args(arguments).first().copied()
            } else {
                let (receiver, method) = context.method_call(expr)?;
                matches!(context.text(method), "size" | "numel" | "nelement").then_some(receiver)
            }
        }
        kind::SUBSCRIPT => {
            let value = expr.field("value")?;
            shape_object(context, value)
        }
        kind::ATTRIBUTE => shape_object(context, expr),
        _ => None,
    }?;
    let measured = syntax::unparenthesize(measured);
    if let Some(operation) = data_dependent_chain(context, measured) {
        return Some(operation);
    }
    if measured.is(kind::IDENTIFIER) {
        let value =
            tensor_values::last_assignment_value(context, context.text(measured), measured)?;
        return data_dependent_chain(context, value);
    }
    None
}

/// `x.shape` → `x`.
fn shape_object<'t>(context: &Context<'t, '_>, attribute: Node<'t>) -> Option<Node<'t>> {
    if attribute.is_not(kind::ATTRIBUTE) {
        return None;
    }
    let name = attribute.field("attribute")?;
    (context.text_is(name, "shape"))
        .then(|| attribute.field("object"))
        .flatten()
}

/// A data-dependent op, possibly followed by shape-keeping methods (`torch.nonzero(m).squeeze(1)`).
fn data_dependent_chain<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> Option<String> {
    let mut current = syntax::unparenthesize(expr);
    for _ in 0..6 {
        if let Some(operation) = super::data_dependent_op(context, current) {
            return Some(operation);
        }
        let (receiver, method) = context.method_call(current)?;
        if !matches!(
            context.text(method),
            "squeeze" | "flatten" | "view" | "reshape" | "t" | "long" | "int" | "to" | "float"
        ) {
            return None;
        }
        current = syntax::unparenthesize(receiver);
    }
    None
}
