//! Precision and dtype: float64, float16 vs bfloat16, autocast and loss scaling on TPU (TPU5xx).

mod autocast_around_backward;
mod cuda_autocast;
mod deprecated_xla_precision_env;
mod dtype_use;
mod float16_dtype;
mod float64_numpy_conversion;
mod float64_tensor;
mod grad_scaler_on_tpu;

use crate::kind;
use crate::word_list::{WordList, word_list};
use tree_sitter::Node;

use crate::checker::Context;
use crate::registry::RuleMeta;
use crate::syntax::NodeExt;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[
    &float64_tensor::FLOAT64_TENSOR,
    &float64_numpy_conversion::FLOAT64_NUMPY_CONVERSION,
    &float16_dtype::FLOAT16_DTYPE,
    &cuda_autocast::CUDA_AUTOCAST,
    &grad_scaler_on_tpu::GRAD_SCALER_ON_TPU,
    &deprecated_xla_precision_env::DEPRECATED_XLA_PRECISION_ENV,
    &autocast_around_backward::AUTOCAST_AROUND_BACKWARD,
];

/// Whether the dtype requested at `call` is deliberate in a way a dtype-changing fix would
/// break: the same statement casts the result back (`x.double().sum().float()`,
/// `x.half()...to(x.dtype)` — an upcast or downcast for one computation), or an `assert` in the
/// enclosing block checks a `.dtype` against it (`words`: the dtype's spellings, such as
/// `["float64", "double"]`). The finding stays; the fix is withheld.
pub(crate) fn dtype_is_deliberate<'t>(
    context: &Context<'t, '_>,
    call: Node<'t>,
    words: &[&str],
) -> bool {
    let source = context.source();
    // The statement around the call.
    let mut statement = call;
    while let Some(parent) = context.parent(statement) {
        if parent.is_any(&[
            kind::BLOCK,
            kind::MODULE,
            kind::FUNCTION_DEFINITION,
            kind::CLASS_DEFINITION,
        ]) {
            break;
        }
        statement = parent;
    }
    let after = &source[call.end_byte().min(statement.end_byte())..statement.end_byte()];
    const CASTS: WordList = word_list![
        ".float()",
        ".half()",
        ".bfloat16()",
        ".double()",
        ".to(",
        ".type(",
        ".type_as(",
    ];
    if CASTS.iter().any(|cast| after.contains(cast)) {
        return true;
    }
    let Some(block) = context.parent(statement) else {
        return false;
    };
    block
        .named_nodes()
        .filter(|sibling| sibling.is(kind::ASSERT_STATEMENT))
        .any(|assertion| {
            let text = crate::syntax::node_text(assertion, source);
            text.contains(".dtype") && words.iter().any(|word| text.contains(word))
        })
}
