//! TPU306: a training `DataLoader` that keeps a smaller last batch (`drop_last` missing).

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Edit, Fix};
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for training `torch.utils.data.DataLoader(...)` calls — shuffled, given a
    /// `sampler=`, or named for training (`train_loader`, `train_set`, `def train(...)`) — with a
    /// batch size (other than 1) and no `drop_last=` argument. Loaders that are not shuffled and
    /// are named for evaluation (`val`, `eval`, `test`, …) are skipped, and so are loaders whose
    /// own names (the variable, dictionary key or dataset) say evaluation and not training, even
    /// when shuffled or sampled.
    ///
    /// ## Why is this bad?
    /// `drop_last` defaults to `False`, so when the dataset size is not a multiple of the batch
    /// size the last batch is smaller. On a TPU a new input shape means a new graph: the last
    /// batch of every epoch triggers a recompilation (and in multi-process training ranks can
    /// get different batch counts and hang). PyTorch/XLA's examples and fixes set
    /// `drop_last=True` for this reason.
    ///
    /// ## Example
    /// ```python
    /// train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// train_loader = DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True)
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `drop_last=True`. It is unsafe: up to `batch_size - 1` samples per epoch are
    /// no longer trained on (with shuffling, different ones each epoch).
    ///
    /// ## Known problems
    /// Loaders built with `batch_sampler=`, `batch_size=None` or `**kwargs` are skipped, and so is
    /// an explicit `drop_last=` of any value. An unshuffled training loader with a neutral name
    /// and no sampler is not reported. A validation or test loader (`self.valid_dl =
    /// DataLoader(self.valid_ds, shuffle=True)` to draw sample images, a `DistributedSampler`
    /// over the test set) is not reported either: `drop_last=True` would drop samples from the
    /// metric, and its short last batch compiles the evaluation graph once more (forward only,
    /// cached for later evaluations); padding the last batch is that loader's port. A shuffled
    /// loader that only its function's name ties to evaluation (`def validate(): return
    /// DataLoader(ds, shuffle=True)`) is still reported.
    ///
    /// ## References
    /// - PyTorch/XLA pull request #1279 and issue #2020 (`drop_last=True` for TPU training)
    /// - PyTorch/XLA, *Source of recompilations* §1 (input shape changes recompile)
    /// - TorchTPU, `advanced_compile.py` ("changes to shapes … require recompilations")
    pub(crate) static DATALOADER_WITHOUT_DROP_LAST = {
        code: "TPU306",
        name: "dataloader-without-drop-last",
        severity: Warning,
        fix: Always,
        kinds: ["call"],
        tokens: ["DataLoader"],
        calls: ["DataLoader"],
        check: check,
    }
}

/// Name fragments of evaluation data.
const EVAL_WORDS: &[&str] = &[
    "val", "eval", "test", "dev_", "_dev", "predict", "infer", "calib", "holdout",
];

/// TPU306
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    let is_loader = context
        .semantic()
        .call_qualified_name(call)
        .is_some_and(|name| name.starts_with("torch.utils.data") && name.ends_with(".DataLoader"));
    if !is_loader {
        return;
    }
    let source = context.source();
    if syntax::has_splat(arguments)
        || context.keyword_arg_node(arguments, "drop_last").is_some()
        || syntax::argument(arguments, 4, "batch_sampler", source).is_some()
        || syntax::argument(arguments, 8, "drop_last", source).is_some()
    {
        return;
    }
    // Without a batch size (default 1, or `None` for unbatched loading) every batch has the
    // same shape.
    let Some(batch_size) = syntax::argument(arguments, 1, "batch_size", source) else {
        return;
    };
    if batch_size.is(kind::NONE) || syntax::integer_value(batch_size, source) == Some(1) {
        return;
    }
    // Training loaders shuffle, sample, or say so in their name; an unshuffled loader without
    // any of these is as likely to feed evaluation, prediction or generation.
    let shuffled = syntax::argument(arguments, 2, "shuffle", source)
        .is_some_and(|shuffle| !shuffle.is_any(&[kind::FALSE, kind::NONE]));
    let sampled = syntax::argument(arguments, 3, "sampler", source)
        .is_some_and(|sampler| sampler.is_not(kind::NONE));
    let (names, has_function) = context_names(context, call, arguments);
    let named_for = |words: &[&str]| {
        names.iter().any(|text| {
            let lower = text.to_ascii_lowercase();
            words.iter().any(|word| lower.contains(word))
        })
    };
    let training = shuffled || sampled || named_for(&["train"]);
    if !training || (!shuffled && named_for(EVAL_WORDS)) {
        return;
    }
    // A loader whose own names (variable, key, dataset) say evaluation and not training is an
    // evaluation loader even when shuffled or sampled (`self.valid_dl = DataLoader(self.valid_ds,
    // shuffle=True)` to draw sample images; a `DistributedSampler` over the test set):
    // `drop_last=True` there would drop samples from the metric.
    let own = &names[..names.len() - usize::from(has_function)];
    if own.iter().any(|text| names_evaluation(text))
        && !own
            .iter()
            .any(|text| text.to_ascii_lowercase().contains("train"))
    {
        return;
    }
    let Some(last) = last_argument(arguments) else {
        return;
    };
    let fix = Fix::unsafe_edit(
        "Add `drop_last=True`",
        vec![Edit::insert(last.end_byte(), ", drop_last=True")],
    );
    context
        .report(
            call.byte_range(),
            "`DataLoader` without `drop_last=True`: a smaller last batch recompiles the step",
        )
        .fix = Some(fix);
}

fn last_argument<'t>(arguments: Node<'t>) -> Option<Node<'t>> {
    arguments
        .named_nodes()
        .filter(|child| child.is_not(kind::COMMENT))
        .last()
}

/// Whether a name has a word of evaluation data (`val_loader`, `self.valid_ds`,
/// `datasets["test"]`, `evalset`), read word by word so that `interval` or `retrieval` is not one.
fn names_evaluation(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| {
            let word = word.to_ascii_lowercase();
            matches!(
                word.as_str(),
                "val" | "dev" | "holdout" | "calib" | "calibration" | "infer" | "inference"
            ) || ["valid", "eval", "test", "predict"]
                .iter()
                .any(|prefix| word.starts_with(prefix))
        })
}

/// The dataset argument, the assigned names and keys, and last the enclosing function's name
/// (the flag says whether there is one).
fn context_names<'t>(
    context: &Context<'t, '_>,
    call: Node<'t>,
    arguments: Node<'t>,
) -> (Vec<String>, bool) {
    let mut texts: Vec<String> = Vec::new();
    if let Some(dataset) = syntax::argument(arguments, 0, "dataset", context.source()) {
        texts.push(context.text(dataset).to_string());
    }
    let mut current = context.parent(call);
    while let Some(parent) = current {
        match parent.kind_key() {
            kind::ASSIGNMENT => {
                if let Some(left) = parent.field("left") {
                    texts.push(context.text(left).to_string());
                }
            }
            kind::PAIR | kind::KEYWORD_ARGUMENT => {
                if let Some(key) = parent.field("key").or_else(|| parent.field("name")) {
                    texts.push(context.text(key).to_string());
                }
            }
            kind::FUNCTION_DEFINITION => {
                if let Some(name) = parent.field("name") {
                    texts.push(context.text(name).to_string());
                    return (texts, true);
                }
                break;
            }
            _ => {}
        }
        current = context.parent(parent);
    }
    (texts, false)
}
