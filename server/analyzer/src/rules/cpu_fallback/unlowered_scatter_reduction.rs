//! TPU211: scatter reductions without an XLA lowering.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;
use crate::syntax;

declare_rule! {
    /// ## What it does
    /// Checks for scatter reductions that PyTorch/XLA runs on the CPU:
    /// `scatter(..., reduce="multiply")` (any `reduce=` other than `"add"`),
    /// `scatter_reduce(..., reduce="mean")`, `scatter_reduce(..., include_self=False)`, and
    /// `index_reduce`.
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA lowers `scatter` without a reduction or with `"add"`, and `scatter_reduce`
    /// only for `"sum"`, `"prod"`, `"amin"` and `"amax"` with `include_self=True`; everything
    /// else calls the CPU fallback (its source carries `TODO: implement scatter_mul` and "mean
    /// is not supported; include_self=false also not supported"). `index_reduce` is absent from
    /// its op table. Each call copies the tensors to the host and back.
    ///
    /// Measured on torch_xla 2.9.0: `scatter(..., reduce="multiply")`, `scatter_reduce` with
    /// `"mean"` or with `include_self=False`, and every `index_reduce` ran on the CPU; `scatter`,
    /// `scatter_add`, and `scatter_reduce` with `"sum"`, `"prod"`, `"amax"`, `"amin"` (including
    /// self) were lowered.
    ///
    /// TorchTPU: not measured (it has no public CPU build). Its sources, as read by a third
    /// party, say that it has no silent CPU fallback: an op it does not implement raises unless
    /// `execution_mode.enable_cpu_fallback = True`; which of these ops it implements is not
    /// documented.
    ///
    /// ## Example
    /// ```python
    /// sums = torch.zeros(n, d, device=x.device)
    /// means = sums.scatter_reduce(0, index, x, reduce="mean", include_self=False)
    /// ```
    ///
    /// Use instead: a lowered reduction plus counts.
    /// ```python
    /// sums = torch.zeros(n, d, device=x.device).scatter_add(0, index, x)
    /// counts = torch.zeros(n, 1, device=x.device).scatter_add(0, index[:, :1], torch.ones_like(x[:, :1]))
    /// means = sums / counts.clamp(min=1)
    /// ```
    ///
    /// ## Known problems
    /// Tensor methods are recognised on any receiver in a file that imports torch (these method
    /// names are specific to tensors); `reduce=` held in a variable is not followed.
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `scatter*`, `index_reduce.*`, `index_add`; torch 2.9.0, torch_xla 2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `torch_xla/csrc/aten_xla_type.cpp` `scatter_reduce_helper`, `scatter_reduce`
    pub(crate) static UNLOWERED_SCATTER_REDUCTION = {
        code: "TPU211",
        name: "unlowered-scatter-reduction",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["scatter", "scatter_", "scatter_reduce", "scatter_reduce_", "index_reduce", "index_reduce_"],
        calls: ["scatter", "scatter_", "scatter_reduce", "scatter_reduce_", "index_reduce", "index_reduce_"],
        check: check,
    }
}

/// TPU211
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    let Some(method) = context.callee_name(call) else {
        return;
    };
    if !matches!(
        method,
        "scatter"
            | "scatter_"
            | "scatter_reduce"
            | "scatter_reduce_"
            | "index_reduce"
            | "index_reduce_"
    ) {
        return;
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    // `torch.scatter(input, ...)` or `x.scatter(...)`: positions below count the input.
    let is_method = match context.qualified_name(function) {
        Some(name) if name == format!("torch.{method}") => false,
        Some(_) => return,
        None => match context.method_call(call) {
            Some((receiver, _)) if helpers::is_probably_tensor(context, receiver) => true,
            _ => return,
        },
    };
    let argument = |position: usize, name: &str| {
        context.keyword_arg(arguments, name).or_else(|| {
            let positional = syntax::positional_args(arguments);
            let index = if is_method {
                position.checked_sub(1)?
            } else {
                position
            };
            positional.get(index).copied()
        })
    };
    let string_at = |node: Option<Node<'_>>| node.and_then(|n| syntax::string_value(n, source));
    let (reported, what) = match method.trim_end_matches('_') {
        "scatter" => {
            // `reduce` is keyword-only.
            let Some(reduce) = context.keyword_arg(arguments, "reduce") else {
                return;
            };
            match syntax::string_value(reduce, source) {
                Some(value) if value != "add" => {
                    (reduce, format!("`{method}(reduce=\"{value}\")`"))
                }
                _ => return,
            }
        }
        "scatter_reduce" => {
            let reduce_node = argument(4, "reduce");
            let reduce = string_at(reduce_node);
            let include_self = context.keyword_arg(arguments, "include_self");
            if let (Some(value), Some(node)) = (&reduce, reduce_node)
                && value == "mean"
            {
                (node, format!("`{method}(reduce=\"mean\")`"))
            } else if let Some(node) =
                include_self.filter(|node| helpers::literal_bool(*node) == Some(false))
            {
                (node, format!("`{method}(include_self=False)`"))
            } else {
                return;
            }
        }
        _ => (function, format!("`{method}`")),
    };
    let message = format!(
        "{what} has no XLA lowering and runs on the CPU{}",
        helpers::hot_path_suffix(context)
    );
    let severity = context.hot_path_severity();
    context.report(reported.byte_range(), message).severity = severity;
}
