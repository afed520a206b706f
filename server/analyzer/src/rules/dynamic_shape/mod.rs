//! Dynamic shapes: values whose shape depends on data, and inputs whose shape changes between
//! steps, each of which costs a host sync or a recompilation on a TPU (TPU3xx).

mod boolean_mask_indexing;
mod dataloader_without_drop_last;
mod dynamic_padding;
mod growing_shape_in_loop;
mod index_read_from_device;
mod masked_select;
mod nonzero_dynamic_shape;
mod pad_sequence_per_batch;
mod repeat_interleave_without_output_size;
mod size_from_dynamic_op;
mod value_dependent_output_op;

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::registry::RuleMeta;
use crate::rules::tensor_values;
use crate::syntax;
use crate::syntax::NodeExt;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[
    &nonzero_dynamic_shape::NONZERO_DYNAMIC_SHAPE,
    &boolean_mask_indexing::BOOLEAN_MASK_INDEXING,
    &masked_select::MASKED_SELECT,
    &value_dependent_output_op::VALUE_DEPENDENT_OUTPUT_OP,
    &repeat_interleave_without_output_size::REPEAT_INTERLEAVE_WITHOUT_OUTPUT_SIZE,
    &dataloader_without_drop_last::DATALOADER_WITHOUT_DROP_LAST,
    &dynamic_padding::DYNAMIC_PADDING,
    &pad_sequence_per_batch::PAD_SEQUENCE_PER_BATCH,
    &size_from_dynamic_op::SIZE_FROM_DYNAMIC_OP,
    &growing_shape_in_loop::GROWING_SHAPE_IN_LOOP,
    &index_read_from_device::INDEX_READ_FROM_DEVICE,
];

/// `torch.<name>` functions whose output shape depends on the input's values.
const DYNAMIC_FUNCTIONS: &[&str] = &[
    "nonzero",
    "argwhere",
    "masked_select",
    "unique",
    "unique_consecutive",
    "bincount",
    "histc",
];

/// The same operations as tensor methods.
const DYNAMIC_METHODS: &[&str] = &[
    "nonzero",
    "argwhere",
    "masked_select",
    "unique",
    "unique_consecutive",
    "bincount",
    "histc",
];

/// If `expr` produces a tensor whose shape depends on data, the operation's name:
/// `torch.nonzero(x)`, `x.unique()`, one-argument `torch.where(c)`, `x[mask]`,
/// `repeat_interleave` with tensor repeats and no `output_size=`.
pub(crate) fn data_dependent_op<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> Option<String> {
    let expr = syntax::unparenthesize(expr);
    match expr.kind_key() {
        kind::CALL => {
            let (function, arguments) = context.call_parts(expr)?;
            if let Some(qualified) = context.qualified_name(function) {
                let name = qualified.strip_prefix("torch.")?;
                if DYNAMIC_FUNCTIONS.contains(&name) {
                    return Some(format!("torch.{name}"));
                }
                if name == "where" && is_one_argument_where(context, arguments) {
                    return Some("torch.where(condition)".to_string());
                }
                if name == "repeat_interleave" && repeats_need_sync(context, arguments, true) {
                    return Some("torch.repeat_interleave".to_string());
                }
                return None;
            }
            let (_, method) = tensor_values::tensor_method_call(
                context,
                expr,
                &[DYNAMIC_METHODS, &["repeat_interleave"]].concat(),
            )?;
            if method == "repeat_interleave" && !repeats_need_sync(context, arguments, false) {
                return None;
            }
            Some(format!(".{method}()"))
        }
        kind::SUBSCRIPT => {
            let value = expr.field("value")?;
            if !context.fact(value).is_tensor() {
                return None;
            }
            let mut cursor = expr.walk();
            let is_masked = expr
                .children_by_field_name("subscript", &mut cursor)
                .any(|index| tensor_values::is_boolean_tensor(context, index));
            is_masked.then(|| "boolean-mask indexing".to_string())
        }
        _ => None,
    }
}

/// `torch.where(condition)` without `input` / `other`.
pub(crate) fn is_one_argument_where<'t>(context: &Context<'t, '_>, arguments: Node<'t>) -> bool {
    syntax::positional_args(arguments).len() == 1
        && !syntax::has_splat(arguments)
        && context.keyword_arg(arguments, "input").is_none()
        && context.keyword_arg(arguments, "other").is_none()
}

/// Whether a `repeat_interleave` call's output size is unknown until `repeats` is read:
/// `repeats` is a tensor and no `output_size=` is given. `function_form` is `torch.f(x, r)`
/// (repeats second) versus `x.f(r)` (repeats first).
pub(crate) fn repeats_need_sync<'t>(
    context: &Context<'t, '_>,
    arguments: Node<'t>,
    function_form: bool,
) -> bool {
    if context.keyword_arg(arguments, "output_size").is_some() || syntax::has_splat(arguments) {
        return false;
    }
    let positional = syntax::positional_args(arguments);
    let repeats = context.keyword_arg(arguments, "repeats").or_else(|| {
        if function_form {
            // `torch.repeat_interleave(repeats)` alone repeats indices by a tensor.
            match positional.len() {
                1 => positional.first().copied(),
                _ => positional.get(1).copied(),
            }
        } else {
            positional.first().copied()
        }
    });
    repeats.is_some_and(|repeats| tensor_values::is_confident_tensor(context, repeats))
}
