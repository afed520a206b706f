//! TPU302: indexing a tensor with a boolean mask (`x[mask]`, `x[mask] = v`).

use crate::kind;
use crate::word_list::{WordList, word_list};
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Edit, Fix};
use crate::rules::{helpers, tensor_values};
use crate::syntax::{self, NodeExt};

declare_rule! {
    /// ## What it does
    /// Checks for subscripts of a tensor whose index is known to be a boolean tensor: a
    /// comparison of tensors (`x[x > 0]`), `~mask`, `m1 & m2`, `torch.isnan(x)`, `x.eq(y)`,
    /// `t.bool()`, a reduction along a dimension (`torch.isnan(y).any(-1)`, `m.all(dim=1)`), or a
    /// local name bound to one of these. Both reads (`y = x[mask]`) and writes
    /// (`x[mask] = 0`) are reported.
    ///
    /// ## Why is this bad?
    /// Reading `x[mask]` returns one element per `True`, a shape known only once the mask is
    /// computed: PyTorch/XLA's troubleshooting guide notes that masked indexing `base[index]`
    /// with a mask tensor goes through `nonzero`, a CPU fallback; TorchTPU calls it "nonzero in
    /// disguise" and reads the size back to the host. Writing `x[mask] = v` lowers to
    /// `index_put_` with boolean indices, which also expands the mask through `nonzero` (PyTorch's
    /// CUDA sync detector lists `x[mask] = 1.` as synchronizing).
    ///
    /// ## Example
    /// ```python
    /// scores[scores < threshold] = 0.0
    /// positives = logits[labels == 1]
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// scores = scores.masked_fill(scores < threshold, 0.0)
    /// positives = torch.where(labels[:, None] == 1, logits, 0.0)  # keep the mask alongside
    /// ```
    ///
    /// ## Fix safety
    /// For a write of a number (`x[mask] = 0`) the fix rewrites to `x.masked_fill_(mask, 0)`,
    /// only when the mask visibly has the shape of `x`: a comparison with `x` itself
    /// (`x[x > 0] = 0`), `torch.isnan(x)` / `x.isinf()` and the like, and `~`, `&`, `|` of such
    /// masks. `masked_fill_` broadcasts the mask from the trailing dimensions while indexing
    /// matches leading dimensions, so for a mask of another shape (`x[lengths > 3] = 0` on a
    /// `[batch, time]` tensor) the rewrite would fill different elements, or raise. The fix
    /// stays unsafe because the index cannot see what `x` is (a property or an expression is
    /// evaluated once more by the rewrite's receiver).
    ///
    /// ## Known problems
    /// Only masks the index can prove boolean are reported; an index whose dtype is unknown (a
    /// parameter, an attribute) is not. Outside hot paths the finding is informational.
    ///
    /// ## References
    /// - PyTorch/XLA, *Troubleshooting — Known Performance Caveats*, caveat 1 (masked indexing uses `nonzero`)
    /// - PyTorch pull request #62092 (`x[mask] = 1.` is a synchronizing operation)
    /// - TorchTPU, host round-trip ops ("`x[bool_mask]` is nonzero in disguise")
    pub(crate) static BOOLEAN_MASK_INDEXING = {
        code: "TPU302",
        name: "boolean-mask-indexing",
        severity: Warning,
        fix: Sometimes,
        kinds: ["subscript"],
        check: check,
    }
}

/// TPU302
fn check<'t>(context: &mut Context<'t, '_>, subscript: Node<'t>) {
    let Some(value) = subscript.field("value") else {
        return;
    };
    // The mask first: most subscripts have none, and the value's fact costs more.
    let mut cursor = subscript.walk();
    let indices: Vec<Node<'_>> = subscript
        .children_by_field_name("subscript", &mut cursor)
        .collect();
    let Some(mask) = indices
        .iter()
        .copied()
        .find(|index| tensor_values::is_boolean_tensor(context, *index))
    else {
        return;
    };
    // A value of unknown kind (a helper's parameter: `box_preds[pos_mask]` in a loss function)
    // indexed by a boolean tensor is a tensor too: lists and dicts cannot be indexed by one.
    // Only a value known to be something else (a NumPy array, a Python value) is left alone.
    let value_is_tensor = context.fact(value).is_tensor();
    if !value_is_tensor && tensor_values::is_known_non_tensor(context, value) {
        return;
    }
    // With the value's kind unknown, the mask itself must be known to be a tensor.
    if !value_is_tensor && !mask_is_known_tensor(context, mask) {
        return;
    }
    // A host tensor indexed, or a host mask (`torch.ones(n)` over pruned heads): the mask is
    // expanded on the host, with no device round trip.
    if helpers::is_on_host(context, value) || helpers::is_on_host(context, mask) {
        return;
    }
    let assignment = context
        .parent(subscript)
        .filter(|parent| parent.is(kind::ASSIGNMENT))
        .filter(|assignment| {
            assignment
                .field("left")
                .is_some_and(|left| left.id() == subscript.id())
        });
    let severity = context.hot_path_severity();
    let mask_text = helpers::short_code(context.text(mask));
    let message = if assignment.is_some() {
        format!(
            "Assignment through boolean mask `{mask_text}` expands the mask with `nonzero`: a host sync or CPU fallback"
        )
    } else {
        format!(
            "Indexing with boolean mask `{mask_text}` returns a data-dependent shape: a host sync or CPU fallback"
        )
    };
    let fix = assignment.and_then(|assignment| {
        let right = assignment.field("right")?;
        let is_number = right.is_any(&[kind::INTEGER, kind::FLOAT])
            || (right.is(kind::UNARY_OPERATOR)
                && right
                    .field("argument")
                    .is_some_and(|a| a.is_any(&[kind::INTEGER, kind::FLOAT])));
        if indices.len() != 1 || !is_number || !mask_has_shape_of(context, mask, value) {
            return None;
        }
        let replacement = format!(
            "{}.masked_fill_({}, {})",
            context.text(value),
            context.text(mask),
            context.text(right)
        );
        Some(Fix::unsafe_edit(
            format!(
                "Replace with `.masked_fill_({})`",
                helpers::short_code(&format!("{mask_text}, {}", context.text(right)))
            ),
            vec![Edit::replace(assignment.byte_range(), replacement)],
        ))
    });
    let diagnostic = context.report(subscript.byte_range(), message);
    diagnostic.severity = severity;
    diagnostic.fix = fix;
}

/// Whether `mask` visibly has the shape of `target`: an elementwise test of `target` itself
/// (`target > 0`, `torch.isnan(target)`, `target.isinf()`), or `~` / `&` / `|` / `^` over such
/// a mask. Names bound elsewhere are not followed: without the mask's shape, no rewrite.
/// Whether the mask is known to be a tensor (a comparison of a known tensor, a name bound to
/// one), not merely read as boolean because the indexed value is a tensor.
fn mask_is_known_tensor<'t>(context: &Context<'t, '_>, mask: Node<'t>) -> bool {
    let mask = syntax::unparenthesize(mask);
    context.fact(mask).is_tensor()
        || (mask.is(kind::COMPARISON_OPERATOR)
            && mask
                .named_nodes()
                .any(|operand| context.fact(operand).is_tensor()))
}

fn mask_has_shape_of<'t>(context: &Context<'t, '_>, mask: Node<'t>, target: Node<'t>) -> bool {
    let same = |node: Node<'t>| {
        compact(context.text(syntax::unparenthesize(node))) == compact(context.text(target))
    };
    let mask = syntax::unparenthesize(mask);
    match mask.kind_key() {
        kind::COMPARISON_OPERATOR => {
            let operands: Vec<Node<'t>> = mask.named_nodes().collect();
            // A chained comparison `0 < x < 1` is still elementwise over `x`.
            operands.iter().any(|operand| same(*operand))
        }
        kind::UNARY_OPERATOR => {
            context.text(mask).trim_start().starts_with('~')
                && mask
                    .field("argument")
                    .is_some_and(|argument| mask_has_shape_of(context, argument, target))
        }
        kind::BINARY_OPERATOR => {
            let operator = mask.field("operator").map(|o| context.text(o));
            matches!(operator, Some("&" | "|" | "^"))
                && syntax::sides(mask).any(|side| mask_has_shape_of(context, side, target))
        }
        kind::CALL => {
            const ELEMENTWISE: WordList = word_list![
                "isnan",
                "isinf",
                "isfinite",
                "isneginf",
                "isposinf",
                "isreal",
                "logical_not",
                "signbit",
                "bool",
            ];
            if let Some((receiver, method)) = context.method_call(mask)
                && ELEMENTWISE.contains(&context.text(method))
                && same(receiver)
            {
                return true;
            }
            let Some((_, arguments)) = context.call_parts(mask) else {
                return false;
            };
            context
                .semantic()
                .call_qualified_name(mask)
                .and_then(|name| name.strip_prefix("torch.").map(str::to_string))
                .is_some_and(|name| ELEMENTWISE.contains(&name.as_str()))
                && syntax::positional_args(arguments)
                    .first()
                    .is_some_and(|first| same(*first))
        }
        _ => false,
    }
}

fn compact(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
