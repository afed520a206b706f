//! TPU308: `pad_sequence` in a collate function or loop, padding each batch to its own length.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::syntax::{self, NodeExt, Visit};

declare_rule! {
    /// ## What it does
    /// Checks for `torch.nn.utils.rnn.pad_sequence(...)` inside a collate function (a function
    /// whose name contains `collate`), a hot path, or a loop, and for a collate function (or a
    /// collator class's `__call__`) that sizes its batch by `max(len(x) for x in batch)` (or by the
    /// largest dimension of its items, `max(x.size(-1) for x in batch)`), unless
    /// that length is rounded up to a bucket: a multiple (`((longest + 63) // 64) * 64`) or the
    /// first of a list of widths that holds it (`next(w for w in widths if w >= longest)`,
    /// `widths[bisect_left(widths, longest)]`, or a function of the file that returns it:
    /// `bucket_len(longest)` with `for b in BUCKETS: if n <= b: return b`).
    ///
    /// ## Why is this bad?
    /// `pad_sequence` pads to the longest sequence it is given, so a per-batch call produces a
    /// different sequence length for almost every batch. On a TPU each new input shape compiles a
    /// new graph; PyTorch/XLA's recompilation notes list custom collate functions that pad to the
    /// batch maximum with `pad_sequence` as a classic source of recompilations.
    ///
    /// ## Example
    /// ```python
    /// def collate(batch):
    ///     ids = pad_sequence([b["ids"] for b in batch], batch_first=True)
    ///     return ids
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def collate(batch, max_len=128):
    ///     ids = torch.stack([F.pad(b["ids"], (0, max_len - len(b["ids"]))) for b in batch])
    ///     return ids
    /// ```
    /// or pad to a bucket (the next multiple of 64, or the first of a few fixed widths) to bound
    /// the number of shapes.
    ///
    /// ## Known problems
    /// A `pad_sequence` whose output is padded again to a fixed length afterwards is still
    /// reported. Calls outside collate functions, loops and hot paths are not reported, nor are
    /// calls outside collate functions and hot paths in a loop over the fields of one table
    /// (`for k, v in d.items()`, `for k in d:` reading `d[k]`), which pads each field once.
    ///
    /// ## References
    /// - PyTorch/XLA, *Source of recompilations* §1 (`docs/source/notes/source_of_recompilation.md`)
    /// - PyTorch/XLA issue #1509 (bucketing advice)
    /// - Hugging Face Accelerate, *TPU best practices* ("no dynamic padding")
    pub(crate) static PAD_SEQUENCE_PER_BATCH = {
        code: "TPU308",
        name: "pad-sequence-per-batch",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["pad_sequence", "max"],
        calls: ["pad_sequence", "max"],
        check: check,
    }
}

/// TPU308
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let is_pad_sequence = context
        .semantic()
        .call_qualified_name(call)
        .is_some_and(|name| name == "torch.nn.utils.rnn.pad_sequence");
    if !is_pad_sequence {
        // `max_len = max(len(x["input_ids"]) for x in batch)` in a collator: the same padding
        // to the batch's longest sequence, written by hand.
        if batch_maximum_length(context, call)
            && in_collator(context)
            && !rounded_to_a_bucket(context, call)
        {
            context.report(
                call.byte_range(),
                "Padding to the `max(...)` of each batch's lengths pads to its longest item: a recompilation per length",
            );
        }
        return;
    }
    let in_collate = context
        .semantic()
        .function()
        .is_some_and(|function| function.name.to_ascii_lowercase().contains("collate"));
    if !in_collate
        && context.hot_path().is_none()
        && (!context.semantic().in_loop()
            || (in_loop_over_fields(context, call) && !in_collator(context)))
    {
        return;
    }
    context.report(
        call.byte_range(),
        "`pad_sequence` per batch pads to each batch's longest sequence: a recompilation per length",
    );
}

/// Whether the innermost loop around `call` walks the fields of one table rather than batches:
/// `for k, v in table.items()`, `for k in table.keys()`, or `for k in table:` whose body reads
/// `table[k]` (RecBole's `for k in data: value = data[k].values` converting each column of a
/// feature table once). Each pass pads another field, once per call: no shape repeats per batch.
/// A collator's `__call__` walking the fields of its batch (`for k in features[0].keys():`) is
/// still per batch; the caller asks [`in_collator`] first.
fn in_loop_over_fields<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let mut current = context.parent(call);
    let for_statement = loop {
        let Some(node) = current else {
            return false;
        };
        match node.kind_key() {
            kind::FOR_STATEMENT => break node,
            kind::WHILE_STATEMENT
            | kind::FUNCTION_DEFINITION
            | kind::CLASS_DEFINITION
            | kind::LAMBDA
            | kind::LIST_COMPREHENSION
            | kind::SET_COMPREHENSION
            | kind::DICTIONARY_COMPREHENSION
            | kind::GENERATOR_EXPRESSION => return false,
            _ => current = context.parent(node),
        }
    };
    let (Some(left), Some(right), Some(body)) = (
        for_statement.field("left"),
        for_statement.field("right"),
        for_statement.field("body"),
    ) else {
        return false;
    };
    if let Some((function, arguments)) = context.call_parts(right)
        && function.is(kind::ATTRIBUTE)
        && function
            .field("attribute")
            .is_some_and(|a| matches!(context.text(a), "items" | "keys"))
        && arguments.named_nodes().next().is_none()
    {
        return true;
    }
    if left.is_not(kind::IDENTIFIER) || !right.is_any(&[kind::IDENTIFIER, kind::ATTRIBUTE]) {
        return false;
    }
    let (key, table) = (context.text(left), context.text(right));
    syntax::any_in_subtree(body, 5_000, |node| {
        if node.is(kind::SUBSCRIPT)
            && node
                .field("value")
                .is_some_and(|v| context.text(v) == table)
            && node
                .field("subscript")
                .is_some_and(|i| context.text(i) == key)
        {
            Visit::Found
        } else {
            Visit::Enter
        }
    })
}

/// Whether the batch's longest length is rounded up to a bucket before it sizes the batch —
/// the bucketing the rule's own fix recommends: a multiple (`((longest + 63) // 64) * 64`,
/// `math.ceil(longest / 64) * 64`) or the first of a list of widths that holds it
/// (`next(w for w in self.buckets if w >= longest)`, `buckets[bisect_left(buckets, longest)]`),
/// with `longest = max(...)` bound in the same function or the `max(...)` call written inside
/// the rounding.
fn rounded_to_a_bucket<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    // Up from the call through the expression it sits in.
    let mut current = call;
    for _ in 0..syntax::MAX_EXPR_DEPTH {
        if is_rounding_up(context, current, None) {
            return true;
        }
        match context.parent(current) {
            Some(parent) if !parent.kind_name().ends_with("statement") => current = parent,
            _ => break,
        }
    }
    // `longest = max(...)`, then the rounding of `longest` somewhere in the function.
    let Some(name) = context
        .parent(call)
        .filter(|parent| parent.is(kind::ASSIGNMENT))
        .and_then(|assignment| assignment.field("left"))
        .filter(|left| left.is(kind::IDENTIFIER))
        .map(|left| context.text(left))
    else {
        return false;
    };
    let Some(function) = context.enclosing(call, &["function_definition"]) else {
        return false;
    };
    syntax::any_in_subtree(function, 5_000, |node| {
        if is_rounding_up(context, node, Some(name)) {
            Visit::Found
        } else {
            Visit::Enter
        }
    })
}

/// `(x + k - 1) // k * k` or `math.ceil(x / k) * k`: a product one factor of which is a floor
/// division or a `ceil` of an expression that mentions `name` (or anything, when `name` is
/// `None` and the expression is the `max(...)` call's ancestor); or a bucket lookup
/// ([`is_bucket_lookup`]).
fn is_rounding_up<'t>(context: &Context<'t, '_>, node: Node<'t>, name: Option<&str>) -> bool {
    if is_bucket_lookup(context, node, name) {
        return true;
    }
    // `bucket_len(longest)`: a function of the file that returns the first width holding it.
    if node.is(kind::CALL)
        && context
            .call_parts(node)
            .is_some_and(|(_, arguments)| mentions_name(context, arguments, name))
        && context.semantic().call_returns_bucket(node)
    {
        return true;
    }
    if node.is_not(kind::BINARY_OPERATOR)
        || node.field("operator").map(|o| context.text(o)) != Some("*")
    {
        return false;
    }
    let mentions = |expr: Node<'t>| mentions_name(context, expr, name);
    syntax::sides(node)
        .map(syntax::unparenthesize)
        .any(|factor| match factor.kind_key() {
            kind::BINARY_OPERATOR => {
                factor.field("operator").map(|o| context.text(o)) == Some("//")
                    && factor.field("left").is_some_and(mentions)
            }
            kind::CALL => context
                .call_parts(factor)
                .is_some_and(|(function, arguments)| {
                    context.text(function).ends_with("ceil") && mentions(arguments)
                }),
            _ => false,
        })
}

/// The first bucket that holds the length: `next(w for w in buckets if w >= x)` (or `min`, or
/// the comparison written `x <= w`), `bisect.bisect_left(buckets, x)` (an index into the
/// buckets), `np.searchsorted(buckets, x)`, with `x` mentioning `name`.
fn is_bucket_lookup<'t>(context: &Context<'t, '_>, node: Node<'t>, name: Option<&str>) -> bool {
    if node.is_not(kind::CALL) {
        return false;
    }
    let Some((function, arguments)) = context.call_parts(node) else {
        return false;
    };
    let callee = context.text(function);
    let callee = callee.rsplit('.').next().unwrap_or(callee);
    match callee {
        "bisect" | "bisect_left" | "bisect_right" | "searchsorted" => {
            syntax::positional_args(arguments).len() >= 2 && mentions_name(context, arguments, name)
        }
        "next" | "min" => {
            let generator = if arguments.is(kind::GENERATOR_EXPRESSION) {
                Some(arguments)
            } else {
                syntax::positional_args(arguments)
                    .first()
                    .map(|a| syntax::unparenthesize(*a))
                    .filter(|a| {
                        matches!(a.kind_name(), "generator_expression" | "list_comprehension")
                    })
            };
            generator.is_some_and(|generator| {
                generator
                    .named_nodes()
                    .filter(|clause| clause.is(kind::IF_CLAUSE))
                    .any(|clause| {
                        clause.named_nodes().any(|condition| {
                            let condition = syntax::unparenthesize(condition);
                            condition.is(kind::COMPARISON_OPERATOR)
                                && [">=", ">", "<=", "<"]
                                    .iter()
                                    .any(|op| context.text(condition).contains(op))
                                && mentions_name(context, condition, name)
                        })
                    })
            })
        }
        _ => false,
    }
}

/// Whether `expr` mentions the identifier `name` (anything when `name` is `None`).
fn mentions_name<'t>(context: &Context<'t, '_>, expr: Node<'t>, name: Option<&str>) -> bool {
    name.is_none_or(|name| syntax::mentions_identifier(expr, name, context.source()))
}

/// `max(len(x) for x in xs)`, `max([len(x) for x in xs])`, `max(map(len, xs))`, and the same
/// with a dimension of each item (`max(x.size(1) for x in xs)`, `max(x.shape[-1] for x in xs)`).
fn batch_maximum_length<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let Some((function, arguments)) = context.call_parts(call) else {
        return false;
    };
    if function.is_not(kind::IDENTIFIER) || !context.text_is(function, "max") {
        return false;
    }
    let iterable = match arguments.kind_key() {
        // `max(len(x) for x in xs)`: the generator is the argument list itself.
        kind::GENERATOR_EXPRESSION => Some(arguments),
        _ => match syntax::positional_args(arguments).as_slice() {
            [only] => Some(*only),
            _ => None,
        },
    };
    let Some(iterable) = iterable.map(syntax::unparenthesize) else {
        return false;
    };
    // Each item's length: `len(x)`, or one of its dimensions (`x.size(1)`, `x.shape[-1]`: a
    // collate of spectrograms or images padded to the widest).
    let is_len = |node: Option<Node<'t>>| {
        node.map(syntax::unparenthesize)
            .is_some_and(|n| match n.kind_key() {
                kind::CALL => {
                    context
                        .call_parts(n)
                        .is_some_and(|(f, _)| f.is(kind::IDENTIFIER) && context.text_is(f, "len"))
                        || context
                            .method_call(n)
                            .is_some_and(|(_, method)| context.text_is(method, "size"))
                }
                kind::SUBSCRIPT => n
                    .field("value")
                    .filter(|value| value.is(kind::ATTRIBUTE))
                    .and_then(|value| value.field("attribute"))
                    .is_some_and(|attribute| context.text_is(attribute, "shape")),
                _ => false,
            })
    };
    match iterable.kind_key() {
        kind::GENERATOR_EXPRESSION | kind::LIST_COMPREHENSION => is_len(iterable.field("body")),
        kind::CALL => context.call_parts(iterable).is_some_and(|(f, a)| {
            context.text_is(f, "map")
                && syntax::positional_args(a)
                    .first()
                    .is_some_and(|first| context.text_is(*first, "len"))
        }),
        _ => false,
    }
}

/// Whether the current code is a collate function: a function whose name contains `collate`, or
/// `__call__` of a class whose name contains `Collat` (`DataCollatorWithPadding`).
fn in_collator(context: &Context<'_, '_>) -> bool {
    let Some(function) = context.semantic().function() else {
        return false;
    };
    if function.name.to_ascii_lowercase().contains("collate") {
        return true;
    }
    function.name == "__call__"
        && context
            .semantic()
            .enclosing_class_name()
            .is_some_and(|class| class.to_ascii_lowercase().contains("collat"))
}
