//! TPU209: `nn.EmbeddingBag` / `F.embedding_bag`, whose training path has no XLA lowering.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Severity;
use crate::rules::helpers;
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for `nn.EmbeddingBag(...)` modules and `F.embedding_bag(...)` calls.
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA lowers only `_embedding_bag_forward_only`, the path PyTorch takes when no
    /// gradient is needed, and even that one falls back for `mode="mean"` (the default),
    /// `scale_grad_by_freq=True`, `sparse=True` or a `padding_idx`. The training path,
    /// `_embedding_bag`, is absent from its op table. So a trainable `EmbeddingBag` copies its
    /// weight and indices to the host in every forward pass.
    ///
    /// TorchTPU: not measured (it has no public CPU build). Its sources, as read by a third
    /// party, say that it has no silent CPU fallback: an op it does not implement raises unless
    /// `execution_mode.enable_cpu_fallback = True`; which of these ops it implements is not
    /// documented.
    ///
    /// ## Example
    /// ```python
    /// self.bag = nn.EmbeddingBag(vocab, dim, mode="mean")
    /// ```
    ///
    /// Use instead: a plain embedding over fixed-size, padded bags, reduced with tensor ops.
    /// ```python
    /// self.embedding = nn.Embedding(vocab, dim)
    /// ...
    /// vectors = self.embedding(ids)                  # (batch, bag, dim), ids padded
    /// pooled = (vectors * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
    /// ```
    ///
    /// Measured on torch_xla 2.9.0: with gradients, every mode ran `aten::_embedding_bag` and
    /// its backward on the CPU; without them, `mode="sum"` and `"max"` lowered and `"mean"` ran
    /// `aten::_embedding_bag_forward_only` on the CPU. So an `F.embedding_bag` call inside
    /// `torch.no_grad()` / `torch.inference_mode()` is reported only for the arguments that fall
    /// back there too.
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `embedding_bag.*`; torch 2.9.0, torch_xla 2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `torch_xla/csrc/aten_xla_type.cpp` `_embedding_bag_forward_only`
    ///   (fallback for mode 1 = mean, `scale_grad_by_freq`, `sparse`, `padding_idx`) and
    ///   `codegen/xla_native_functions.yaml` (no `_embedding_bag`)
    pub(crate) static EMBEDDING_BAG = {
        code: "TPU209",
        name: "embedding-bag",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["EmbeddingBag", "embedding_bag"],
        calls: ["EmbeddingBag", "embedding_bag", "from_pretrained"],
        check: check,
    }
}

/// TPU209
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    if !context
        .callee_name(call)
        .is_some_and(|name| matches!(name, "EmbeddingBag" | "embedding_bag" | "from_pretrained"))
    {
        return;
    }
    let Some(target) = helpers::torch_call(context, call) else {
        return;
    };
    let is_module = match target.name.as_str() {
        "torch.nn.EmbeddingBag" | "torch.nn.EmbeddingBag.from_pretrained" => true,
        "torch.nn.functional.embedding_bag" if target.receiver.is_none() => false,
        _ => return,
    };
    let arguments = target.arguments;
    let mode = context
        .keyword_arg(arguments, "mode")
        .and_then(|m| syntax::string_value(m, source).map(|m| m.into_owned()));
    let flag_set = |name: &str| {
        context
            .keyword_arg(arguments, name)
            .and_then(helpers::literal_bool)
            == Some(true)
    };
    let has_padding = context
        .keyword_arg(arguments, "padding_idx")
        .is_some_and(|value| value.is_not(kind::NONE));
    // `**kwargs` may carry any mode: only the training-path reason is certain.
    let inference_reason = if syntax::has_splat(arguments) {
        None
    } else if mode.as_deref().is_none_or(|m| m == "mean") {
        Some("mode=\"mean\"")
    } else if flag_set("scale_grad_by_freq") {
        Some("scale_grad_by_freq=True")
    } else if flag_set("sparse") {
        Some("sparse=True")
    } else if has_padding {
        Some("padding_idx")
    } else {
        None
    };
    let what = if is_module {
        "`nn.EmbeddingBag`"
    } else {
        "`F.embedding_bag`"
    };
    let message = match inference_reason {
        Some(reason) => format!("{what} with {reason} runs on the CPU: no XLA lowering"),
        // Without autograd PyTorch takes `_embedding_bag_forward_only`, which lowers for these
        // arguments (measured: `embedding_bag.functional.{sum,max}.no_grad`).
        None if !is_module && super::under_no_grad(context, call) => return,
        None => {
            format!("{what} runs on the CPU when training: `_embedding_bag` has no XLA lowering")
        }
    };
    let severity = if is_module {
        Severity::Warning
    } else {
        context.hot_path_severity()
    };
    let range = call
        .field("function")
        .map_or(call.byte_range(), |f| f.byte_range());
    context.report(range, message).severity = severity;
}
