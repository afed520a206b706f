//! TPU801: `nn.Linear` / `nn.Embedding` sizes that pad badly onto the TPU's 128-wide tiles.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::syntax;

declare_rule! {
    /// ## What it does
    /// Checks `nn.Linear(in_features, out_features)` and
    /// `nn.Embedding(num_embeddings, embedding_dim)` for literal sizes of at least 256 that are
    /// not multiples of 128. Off by default.
    ///
    /// ## Why is this bad?
    /// The TPU matrix unit works on 128×128 tiles and its vector registers are 8×128; XLA pads
    /// every dimension up to those multiples. A layer of width 1000 is computed as 1024, a
    /// vocabulary of 50257 as 50304 — the padding costs compute and memory on every step, and
    /// misaligned shapes can force relayouts. Google's TPU performance guide asks for feature
    /// dimensions that are multiples of 128; TorchTPU's profiling guide says to "pad dimensions
    /// to multiples of 128" when MXU utilisation is low.
    ///
    /// ## Example
    /// ```python
    /// self.head = nn.Linear(768, 1000)
    /// self.embed = nn.Embedding(50257, 768)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// self.head = nn.Linear(768, 1024)      # and ignore the extra logits
    /// self.embed = nn.Embedding(50304, 768)  # vocabulary padded to a multiple of 128
    /// ```
    ///
    /// ## Known problems
    /// Only integer literals are checked; sizes from configuration are invisible. Output sizes
    /// fixed by a task (class counts) may be worth padding only for large layers, which is why
    /// sizes below 256 are never reported.
    ///
    /// ## References
    /// - Google Cloud TPU performance guide: https://cloud.google.com/tpu/docs/performance-guide
    /// - TorchTPU `docs/notebooks/performance_profiling.py` (https://github.com/google-pytorch/torch_tpu): low MXU utilisation →
    ///   "pad dimensions to multiples of 128"
    pub(crate) static UNALIGNED_FEATURE_DIM = {
        code: "TPU801",
        name: "unaligned-feature-dim",
        severity: Info,
        fix: None,
        kinds: ["call"],
        tokens: ["Linear", "Embedding"],
        calls: ["torch.nn.Linear", "torch.nn.Embedding"],
        check: check,
        enabled_by_default: false,
    }
}

/// TPU801
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some(qualified) = context.semantic().call_qualified_name(call) else {
        return;
    };
    let parameters: [(usize, &str); 2] = match qualified.as_str() {
        "torch.nn.Linear" => [(0, "in_features"), (1, "out_features")],
        "torch.nn.Embedding" => [(0, "num_embeddings"), (1, "embedding_dim")],
        _ => return,
    };
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    let source = context.source();
    let layer = qualified.rsplit('.').next().unwrap_or("");
    for (position, name) in parameters {
        let Some(argument) = syntax::argument(arguments, position, name, source) else {
            continue;
        };
        let Some(value) = syntax::integer_value(argument, source) else {
            continue;
        };
        if value < 256 || value % 128 == 0 {
            continue;
        }
        let padded = (value + 127) / 128 * 128;
        context.report(
            argument.byte_range(),
            format!("`{layer}` {name}={value} is not a multiple of 128; TPU lanes round it up to {padded}"),
        );
    }
}
