//! TPU307: tokenizers and collators that pad each batch to its own longest sequence.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Edit, Fix};
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for dynamic padding: a tokenizer or processor called with `padding=True` or
    /// `padding="longest"`, and Hugging Face collators that pad dynamically by default
    /// (`DataCollatorWithPadding`, `DataCollatorForSeq2Seq`,
    /// `DataCollatorForTokenClassification` without `padding=`), and a tokenizer's `pad` called
    /// without `padding=` (`self.processor.tokenizer.pad(label_features, return_tensors="pt")`
    /// in a hand-written collator: its default is `padding=True`), unless `pad_to_multiple_of=`
    /// buckets the lengths.
    ///
    /// ## Why is this bad?
    /// Padding to the longest sequence of each batch gives every batch a different sequence
    /// length, and on a TPU every new input shape compiles a new graph. PyTorch/XLA's
    /// recompilation notes name dynamic padding as the first source of recompilations, and
    /// Hugging Face Accelerate's TPU guide says plainly: no dynamic padding for NLP tasks on TPU.
    ///
    /// ## Example
    /// ```python
    /// batch = tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// batch = tokenizer(texts, padding="max_length", truncation=True, max_length=128, return_tensors="pt")
    /// ```
    /// or bucket lengths with `pad_to_multiple_of=64` to bound the number of shapes.
    ///
    /// ## Fix safety
    /// When the call also passes `max_length=`, the fix replaces the padding value with
    /// `"max_length"`. It is unsafe: every batch becomes `max_length` long, which costs memory
    /// and compute for short batches (and models that assume no padding tokens may change
    /// results). Without `max_length=` no fix is offered, since `"max_length"` would pad to the
    /// model's maximum.
    ///
    /// ## Known problems
    /// Any call with `padding=True` / `padding="longest"` outside `torch` is taken for a
    /// tokenizer or processor call, except the construction of a class not named like a
    /// tokenizer, processor, feature extractor or collator (`RandomLoadText(..., padding=True)`
    /// is configured by the keyword; it pads nothing per batch). Results assigned to an
    /// `untruncated*` name (the diffusers idiom that tokenizes a prompt only to detect
    /// truncation) are skipped.
    ///
    /// ## References
    /// - PyTorch/XLA, *Source of recompilations* §1 (`docs/source/notes/source_of_recompilation.md`)
    /// - Hugging Face Accelerate, *TPU best practices* ("no dynamic padding")
    /// - PyTorch/XLA issue #1509 (bucketing advice)
    /// - TorchTPU, `advanced_compile.py` ("changes to shapes … require recompilations")
    pub(crate) static DYNAMIC_PADDING = {
        code: "TPU307",
        name: "dynamic-padding",
        severity: Warning,
        fix: Sometimes,
        kinds: ["keyword_argument", "call"],
        check: check,
    }
}

/// Hugging Face collators whose `padding` defaults to `True` (pad to the longest).
const DYNAMIC_COLLATORS: &[&str] = &[
    "DataCollatorWithPadding",
    "DataCollatorForSeq2Seq",
    "DataCollatorForTokenClassification",
];

/// TPU307
fn check<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    match node.kind_key() {
        kind::KEYWORD_ARGUMENT => check_keyword(context, node),
        kind::CALL => check_collator(context, node),
        _ => {}
    }
}

fn check_keyword<'t>(context: &mut Context<'t, '_>, keyword: Node<'t>) {
    let source = context.source();
    let (Some(name), Some(value)) = (keyword.field("name"), keyword.field("value")) else {
        return;
    };
    if !context.text_is(name, "padding") {
        return;
    }
    let is_dynamic = value.is(kind::TRUE)
        || syntax::string_value(value, source).is_some_and(|text| text == "longest");
    if !is_dynamic {
        return;
    }
    let Some(arguments) = context
        .parent(keyword)
        .filter(|p| p.is(kind::ARGUMENT_LIST))
    else {
        return;
    };
    let Some(call) = context.parent(arguments).filter(|p| p.is(kind::CALL)) else {
        return;
    };
    if context
        .semantic()
        .call_qualified_name(call)
        .is_some_and(|name| name.starts_with("torch") || name.starts_with("numpy"))
        || context
            .keyword_arg(arguments, "pad_to_multiple_of")
            .is_some_and(|v| v.is_not(kind::NONE))
    {
        return;
    }
    if only_measures_length(context, call) || configures_other_object(context, call) {
        return;
    }
    let has_max_length = context
        .keyword_arg(arguments, "max_length")
        .is_some_and(|v| v.is_not(kind::NONE));
    let diagnostic = context.report(
        keyword.byte_range(),
        format!(
            "`padding={}` pads each batch to its longest sequence: a new shape, and a recompilation, per length",
            context.text(value)
        ),
    );
    if has_max_length {
        diagnostic.fix = Some(Fix::unsafe_edit(
            "Replace with `padding=\"max_length\"`",
            vec![Edit::replace(value.byte_range(), "\"max_length\"")],
        ));
    }
}

/// `RandomLoadText(..., padding=True)`: a class constructed with `padding=True` is configured
/// by it; only a tokenizer, processor, feature extractor or collator pads a batch to its longest
/// sequence that way (Hugging Face's meaning of the keyword). Calls of instances and functions
/// (`tokenizer(texts, padding=True)`) are reported whatever their name.
fn configures_other_object<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let Some(function) = call.field("function") else {
        return false;
    };
    let name = context.text(function).rsplit('.').next().unwrap_or("");
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && !["Token", "Processor", "Extractor", "Collator"]
            .iter()
            .any(|part| name.contains(part))
}

/// `untruncated_ids = tokenizer(prompt, padding="longest", ...).input_ids`: diffusers pipelines
/// tokenize without truncation only to warn about truncated prompts; the ids never reach the
/// model.
fn only_measures_length<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let mut current = context.parent(call);
    for _ in 0..4 {
        let Some(parent) = current else { return false };
        if parent.is(kind::ASSIGNMENT) {
            return parent
                .field("left")
                .is_some_and(|left| context.text(left).contains("untruncated"));
        }
        current = context.parent(parent);
    }
    false
}

fn check_collator<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    if tokenizer_pad_by_default(context, function, arguments) {
        context.report(
            call.byte_range(),
            "`tokenizer.pad(...)` pads to the batch's longest sequence by default (`padding=True`): a new shape, and a recompilation, per length".to_string(),
        );
        return;
    }
    let Some(qualified) = context.qualified_name(function) else {
        return;
    };
    let Some(collator) = DYNAMIC_COLLATORS
        .iter()
        .copied()
        .find(|name| qualified.starts_with("transformers") && qualified.ends_with(name))
    else {
        return;
    };
    if syntax::has_splat(arguments)
        || context.keyword_arg_node(arguments, "padding").is_some()
        || context
            .keyword_arg(arguments, "pad_to_multiple_of")
            .is_some_and(|v| v.is_not(kind::NONE))
    {
        return;
    }
    context.report(
        call.byte_range(),
        format!("`{collator}` pads each batch to its longest sequence by default: a recompilation per length"),
    );
}

/// `self.processor.tokenizer.pad(label_features, return_tensors="pt")`: a Hugging Face
/// tokenizer's `pad` (the receiver's last name ends in `tokenizer`) without `padding=`, whose
/// default is `True` (the longest of the batch), and without `pad_to_multiple_of=` or a splat that
/// could pass either. A feature extractor's `pad` is left alone: audio and image features usually
/// come at a fixed size (Whisper's 30-second log-mels).
fn tokenizer_pad_by_default<'t>(
    context: &Context<'t, '_>,
    function: Node<'t>,
    arguments: Node<'t>,
) -> bool {
    let Some((receiver, method)) = function
        .is(kind::ATTRIBUTE)
        .then(|| function.field("object").zip(function.field("attribute")))
        .flatten()
    else {
        return false;
    };
    if !context.text_is(method, "pad") {
        return false;
    }
    let receiver_name = match receiver.kind_key() {
        kind::ATTRIBUTE => receiver.field("attribute").map(|a| context.text(a)),
        kind::IDENTIFIER => Some(context.text(receiver)),
        _ => None,
    };
    receiver_name.is_some_and(|name| name.to_ascii_lowercase().ends_with("tokenizer"))
        && !syntax::has_splat(arguments)
        && context.keyword_arg_node(arguments, "padding").is_none()
        && context
            .keyword_arg(arguments, "pad_to_multiple_of")
            .is_none_or(|v| v.is(kind::NONE))
}
