//! TPU310: a tensor that grows or is sliced by the loop's counter on every iteration.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Severity;
use crate::rules::helpers;
use crate::semantic::HotPath;
use crate::syntax::{self, NodeExt, node_text};

declare_rule! {
    /// ## What it does
    /// Checks loops whose tensors change shape on every iteration: a tensor concatenated onto
    /// itself (`generated = torch.cat([generated, next_token], dim=-1)`) and a tensor sliced by
    /// the loop's counter (`cache[:, :cur]` in `for cur in range(start, end):`), and a device
    /// tensor indexed by the counter (`sigmas[i]`, `sigmas[i + 1]` in a sampling loop).
    ///
    /// ## Why is this bad?
    /// A TPU program is compiled for fixed shapes. A sequence that grows by a token per
    /// iteration, or a slice whose bound is a new Python int each time, gives every iteration a
    /// new shape: PyTorch/XLA traces and compiles a new graph per length, and TorchTPU's
    /// compiled mode recompiles per length. An autoregressive decode loop written this way
    /// compiles once per generated token.
    ///
    /// ## Example
    /// ```python
    /// for _ in range(max_new_tokens):
    ///     next_token = model(generated).logits[:, -1].argmax(-1, keepdim=True)
    ///     generated = torch.cat([generated, next_token], dim=-1)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// generated = torch.full((batch, max_len), pad_id, device=device)
    /// cur = torch.tensor([prompt_len], device=device)
    /// for _ in range(prompt_len, max_len):
    ///     logits = model(generated, attention_mask=positions < cur)
    ///     next_token = logits.index_select(1, cur - 1).argmax(-1)
    ///     generated.index_copy_(1, cur, next_token)
    ///     cur += 1
    /// ```
    /// a buffer of the final size written in place at a position held in a device tensor
    /// (`index_copy_` / a masked write), with a mask for the positions not yet filled, as
    /// static-cache generation does. A write by a Python counter (`generated[:, cur] = ...`)
    /// is a constant of the graph like a read: measured, one compilation per step.
    ///
    /// ## Known problems
    /// Only loops that run the device once per iteration are checked: the loop syncs
    /// (`torch_xla.sync()`, `xm.mark_step()`), runs a training step or reads a value back. A
    /// Python loop inside `forward` (over layers, chunks or skip connections) is traced into one
    /// graph per call and is not reported. A decode loop, one that concatenates a tensor onto
    /// itself from its own value through a call (`idx = torch.cat((idx, sample(model(idx))), 1)`),
    /// is reported even when it never syncs, at warning wherever it is: TorchTPU runs it eagerly
    /// at a new length every step, and PyTorch/XLA unrolls every length into one graph per call.
    /// So is anything else such a loop grows onto itself (its attention mask). A stack of layers
    /// applied in turn (`for layer in self.layers: x = torch.cat([x, layer(x)], 1)`) is no
    /// decode loop.
    /// A tensor rebound earlier in the same iteration before it is concatenated onto itself keeps
    /// a fixed shape and is not reported.
    /// Only the loop's own counter, a name the body of a loop over `range(...)` steps by a
    /// number in a statement of its own (`pos += 1`), and a tensor concatenated onto itself are
    /// followed; a length kept otherwise (`pos = ids.shape[1]` re-read each iteration, a
    /// `while` loop's counter) is not. A concatenation of host tensors (results of `.cpu()`,
    /// factories without `device=`) is not reported: it never reaches the device. Reported as
    /// information outside a training loop or step function.
    /// A slice of a fixed size at an offset that moves with the counter (`idx[i : i + k]` with `k`
    /// loop-invariant, `x[:, cur - 1 : cur]`, and a strided `x[:, i::k]` over interleaved
    /// columns, whose size differs by at most one) keeps its shape: it is reported, as information,
    /// for its offset, a constant of the traced graph that compiles once per distinct value. So is
    /// an integer index by the counter, read or written (`sigmas[i]`, `tokens[:, cur] = t`):
    /// measured on torch_xla 2.9, eight steps compile eight graphs and a second pass none
    /// (`scripts/measure-step-indexing.py`); it is reported in loops that sync or train, not in
    /// loops that only read values back (post-processing over a batch, where the host read is
    /// the problem);
    /// `sigmas.index_select(0, step)` with `step` a device tensor compiles one, and so does a host
    /// list of the values read before the loop. The counter is followed only in its own loop:
    /// `self.sigmas[i]` in a scheduler method that the sampling loop calls with its counter is
    /// not reported. Nor is an index into the tuple a split returns (`x_split = torch.split(x, n)`,
    /// `x.chunk(k)`, `x.unbind(0)`; `x_split[i]` per micro-batch): it picks one of the pieces the
    /// split made, as `for piece in x_split` does.
    ///
    /// ## References
    /// - PyTorch/XLA, *Source of recompilations* (`docs/source/notes/source_of_recompilation.md`:
    ///   a new input shape compiles a new graph)
    /// - TorchTPU, `advanced_compile.py` ("changes to shapes … require recompilations")
    /// - Hugging Face Transformers, *LLM inference optimization*: static KV cache
    ///   (`cache_implementation="static"`) for compiled generation
    pub(crate) static GROWING_SHAPE_IN_LOOP = {
        code: "TPU310",
        name: "growing-shape-in-loop",
        severity: Warning,
        fix: None,
        kinds: ["assignment", "subscript"],
        tokens: ["cat", "concat", "concatenate", "range"],
        check: check,
    }
}

/// TPU310
fn check<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    if !context.semantic().in_loop() || context.semantic().in_cold_code() {
        return;
    }
    let Some(loop_node) = context.enclosing(node, &["for_statement", "while_statement"]) else {
        return;
    };
    // Only a loop that runs the device once per iteration (it syncs, runs a training step, or
    // reads a value back: a decode loop's `if finished.all(): break`) sees a new shape per
    // iteration; a loop inside `forward` over layers is traced once into one graph, whatever
    // shapes its iterations have.
    let Some(summary) = context.semantic().loop_summary(loop_node) else {
        return;
    };
    // An integer index by the counter matters where each iteration runs the step's whole graph
    // (it syncs or trains); in a loop that only reads values back (post-processing over a
    // batch), the read is the problem and the host-sync rules report it.
    let steps_per_iteration = summary.syncs || summary.calls_backward || summary.steps_optimizer;
    let executes_per_iteration = steps_per_iteration || summary.reads_values;
    // A decode loop: a tensor grows from its own value through a call (the model), so every
    // iteration runs the model at a new length, whether or not the loop syncs, and whatever else
    // it concatenates onto itself (the attention mask) grows per step with it. Not in `forward`,
    // where a loop over layers (`x = torch.cat([x, layer(x)], 1)`) is one traced graph per call.
    let decode_loop = summary.decodes
        && node.is(kind::ASSIGNMENT)
        && context.semantic().hot_path() != Some(HotPath::Forward);
    if !executes_per_iteration && !decode_loop {
        return;
    }
    let (message, moving_offset) = match node.kind_key() {
        kind::ASSIGNMENT => (
            grows_onto_itself(context, node, loop_node, decode_loop),
            false,
        ),
        _ => match sliced_by_counter(context, node, loop_node, steps_per_iteration) {
            Some(SliceFinding::NewShape(message)) => (Some(message), false),
            Some(SliceFinding::MovingOffset(message)) => (Some(message), true),
            None => (None, false),
        },
    };
    let Some(message) = message else {
        return;
    };
    // A fixed-size slice at a moving offset compiles once per distinct offset, and the graphs
    // are cached: information, whatever the loop.
    let severity = if moving_offset {
        Severity::Info
    } else if decode_loop {
        // The decode loop is the hot path of generation, wherever the file calls it from.
        context.rule().severity
    } else {
        context.hot_path_severity()
    };
    let diagnostic = context.report(node.byte_range(), message);
    diagnostic.severity = severity;
}

/// `x = torch.cat([x, y], …)`: the message when `x` grows onto itself.
fn grows_onto_itself<'t>(
    context: &Context<'t, '_>,
    assignment: Node<'t>,
    loop_node: Node<'t>,
    decode_loop: bool,
) -> Option<String> {
    let source = context.source();
    let (left, right) = (assignment.field("left")?, assignment.field("right")?);
    if left.is_not(kind::IDENTIFIER) {
        return None;
    }
    let name = node_text(left, source);
    let right = syntax::unparenthesize(right);
    let qualified = context.semantic().call_qualified_name(right)?;
    if !matches!(
        qualified.as_str(),
        "torch.cat" | "torch.concat" | "torch.concatenate"
    ) {
        return None;
    }
    let (_, arguments) = context.call_parts(right)?;
    let tensors = syntax::unparenthesize(*syntax::positional_args(arguments).first()?);
    if !tensors.is_any(&[kind::LIST, kind::TUPLE]) {
        return None;
    }
    let parts: Vec<Node<'t>> = tensors.named_nodes().collect();
    // Its rows reordered (`beams[beam_idx]` in a beam search: one index, not a slice) keep its
    // width, so concatenating them along a later dimension grows it just the same. A slice
    // (`x[:, 1:]`, a sliding window) may keep the size fixed, and so may a concatenation along
    // dimension 0 of selected rows.
    let along_later_dim = concatenates_along_later_dim(context, arguments);
    let onto_itself = parts.iter().any(|part| {
        (part.is(kind::IDENTIFIER) && node_text(*part, source) == name)
            || (along_later_dim && selects_rows_of(*part, name, source))
    });
    if !onto_itself || parts.iter().any(|part| helpers::is_on_host(context, *part)) {
        return None;
    }
    // Carried from the last iteration, not rebound earlier in this one
    // (`x = torch.cat([latents] * 2)` … `x = torch.cat([x, mask], dim=1)` has a fixed shape).
    let semantic = context.semantic();
    let body_start = loop_node.field("body")?.start_byte();
    let rebound_in_iteration = semantic
        .function_around(assignment)
        .and_then(|function| {
            semantic.last_assignment_before(function, name, assignment.start_byte())
        })
        .is_some_and(|value| value.start_byte() >= body_start);
    if rebound_in_iteration {
        return None;
    }
    if decode_loop {
        return Some(format!(
            "`{name}` grows on every step of this decode loop (`torch.cat` onto itself; the loop feeds the model its own output): every length is a new shape to compile; write into a buffer of the final size"
        ));
    }
    Some(format!(
        "`{name}` grows on every iteration (`torch.cat` onto itself): a new shape, and a compilation, per step; write into a buffer of the final size"
    ))
}

/// `cache[:, :cur]` with `cur` the loop's counter: what the slice changes when a bound is the
/// counter.
/// `x[idx]`: the rows of `name` picked by one index that is not a slice or a literal.
fn selects_rows_of(part: Node<'_>, name: &str, source: &str) -> bool {
    if part.is_not(kind::SUBSCRIPT)
        || !part
            .field("value")
            .is_some_and(|value| value.is(kind::IDENTIFIER) && node_text(value, source) == name)
    {
        return false;
    }
    let mut cursor = part.walk();
    let indices: Vec<Node<'_>> = part
        .children_by_field_name("subscript", &mut cursor)
        .collect();
    matches!(indices.as_slice(), [index] if !index.is_any(&[kind::SLICE, kind::INTEGER, kind::UNARY_OPERATOR, kind::TUPLE, kind::ELLIPSIS, kind::NONE]))
}

/// Whether `torch.cat(..., dim=d)` names a dimension other than 0 (`dim=-1`, `dim=1`, a second
/// positional argument `1`).
fn concatenates_along_later_dim<'t>(context: &Context<'t, '_>, arguments: Node<'t>) -> bool {
    let source = context.source();
    let dim = syntax::keyword_arg(arguments, "dim", source)
        .or_else(|| syntax::keyword_arg(arguments, "axis", source))
        .or_else(|| syntax::positional_args(arguments).get(1).copied());
    dim.is_some_and(|dim| {
        let text = node_text(syntax::unparenthesize(dim), source).replace(' ', "");
        text.parse::<i64>().is_ok_and(|d| d != 0)
    })
}

fn sliced_by_counter<'t>(
    context: &Context<'t, '_>,
    subscript: Node<'t>,
    loop_node: Node<'t>,
    steps_per_iteration: bool,
) -> Option<SliceFinding> {
    let source = context.source();
    // The loop's own counter (`for cur in range(start, end):`), then a counter the body steps
    // by a number (`pos += 1` in a decode loop over `range(max_new_tokens)`).
    let range_counter = loop_node
        .is(kind::FOR_STATEMENT)
        .then(|| loop_node.field("left"))
        .flatten()
        .filter(|l| l.is(kind::IDENTIFIER))
        .filter(|_| {
            loop_node
                .field("right")
                .and_then(|r| syntax::call_parts(syntax::unparenthesize(r)))
                .is_some_and(|(function, _)| syntax::text_is(function, source, "range"))
        });
    if let Some(counter) = range_counter
        && let Some(finding) = sliced_by(
            context,
            subscript,
            loop_node,
            node_text(counter, source),
            steps_per_iteration,
        )
    {
        return Some(finding);
    }
    // Only in a loop over `range(...)`: the rule's tokens must be necessary to its findings
    // (the prefilter), and a decode loop over `range(max_new_tokens)` is where it happens.
    range_counter?;
    let stepped = stepped_counter(context, loop_node)?;
    sliced_by(context, subscript, loop_node, stepped, steps_per_iteration)
}

/// A name the loop's body steps by an integer in a statement of its own (`pos += 1`,
/// `cur_len += 1`): it takes a new value on every iteration, like the loop's counter. Not a
/// tensor stepped in place.
fn stepped_counter<'t>(context: &Context<'t, '_>, loop_node: Node<'t>) -> Option<&'t str> {
    let body = loop_node.field("body")?;
    body.named_nodes().find_map(|statement| {
        let step = statement
            .is(kind::EXPRESSION_STATEMENT)
            .then(|| statement.named_child(0))
            .flatten()
            .filter(|s| s.is(kind::AUGMENTED_ASSIGNMENT))?;
        // A device tensor stepped in place (`cache_position += 1`) indexes without a constant:
        // that is the rule's own fix.
        let left = step
            .field("left")
            .filter(|l| l.is(kind::IDENTIFIER) && !context.fact(*l).is_tensor())?;
        let by_integer = step
            .field("operator")
            .is_some_and(|o| context.text_is(o, "+="))
            && step
                .field("right")
                .is_some_and(|r| syntax::unparenthesize(r).is(kind::INTEGER));
        by_integer.then(|| node_text(left, context.source()))
    })
}

/// [`sliced_by_counter`] for one counter.
fn sliced_by<'t>(
    context: &Context<'t, '_>,
    subscript: Node<'t>,
    loop_node: Node<'t>,
    counter: &str,
    steps_per_iteration: bool,
) -> Option<SliceFinding> {
    let source = context.source();
    let value = subscript.field("value")?;
    if !context.fact(value).is_tensor()
        || helpers::is_on_host(context, value)
        || is_tensor_tuple(context, value)
    {
        return None;
    }
    let mut cursor = subscript.walk();
    let indices: Vec<Node<'t>> = subscript
        .children_by_field_name("subscript", &mut cursor)
        .collect();
    // The slices with a bound that mentions the counter.
    let mut slices: Vec<Node<'t>> = Vec::new();
    for index in indices.iter().copied() {
        if index.is(kind::SLICE)
            && syntax::named_children(index)
                .into_iter()
                .any(|bound| mentions(bound, counter, source))
        {
            slices.push(index);
        }
    }
    let name = helpers::short_code(context.text(value));
    let invariant = |expr: Node<'t>| loop_invariant(context, expr, counter, loop_node);
    if slices.is_empty() {
        // `sigmas[i]`, `sigmas[i + 1]`: an integer index by the counter is a constant of the
        // traced graph too, a new graph per step (measured: 8 compilations in 8 steps, none on
        // a second pass; scripts/measure-step-indexing.py).
        // A write (`tokens[:, cur] = next_token`) measures the same: 8 compilations in 8 steps;
        // `index_copy_` with a device position compiles one.
        let by_counter = steps_per_iteration
            && indices.iter().any(|index| {
                index.is_not(kind::SLICE)
                    && counter_plus_invariant(*index, counter, source, &invariant)
            });
        return by_counter.then(|| {
            SliceFinding::MovingOffset(format!(
                "`{name}` is indexed by the loop counter `{counter}`: the index is a constant of the traced graph, so each step compiles its own graph (once per distinct index); index with a device tensor (`{name}.index_select(0, step)`) or read the values into a host list before the loop"
            ))
        });
    }
    if slices
        .iter()
        .all(|slice| fixed_size_slice(*slice, counter, source, &invariant))
    {
        // `batch_idxs[i : i + k]`: the same size every iteration, only the offset moves.
        return Some(SliceFinding::MovingOffset(format!(
            "`{name}` is sliced at an offset that moves with the loop counter `{counter}` (its size stays fixed): the offset is a constant of the traced graph, so each distinct offset compiles once; index with a device tensor of positions (`index_select`) to keep one graph"
        )));
    }
    Some(SliceFinding::NewShape(format!(
        "`{name}` is sliced by the loop counter `{counter}`: a new shape, and a compilation, per iteration; slice a fixed size and mask instead"
    )))
}

/// Whether `value` is a tuple of tensors, or a name last bound to one (`x_split = torch.split(x,
/// n)`): `x_split[i]` picks one of the pieces the split made, as `for piece in x_split` does;
/// the counter indexes a Python tuple, not a tensor of the graph.
fn is_tensor_tuple<'t>(context: &Context<'t, '_>, value: Node<'t>) -> bool {
    let value = syntax::unparenthesize(value);
    let bound = if value.is(kind::IDENTIFIER) {
        crate::rules::tensor_values::last_assignment_value(context, context.text(value), value)
    } else {
        Some(value)
    };
    bound
        .and_then(|bound| syntax::call_parts(syntax::unparenthesize(bound)))
        .is_some_and(|(function, _)| {
            let text = context.text(function);
            let last = text.rsplit('.').next().unwrap_or(text);
            crate::torch_api::TENSOR_TUPLE_FUNCTIONS.contains(&last)
        })
}

/// What a slice by the loop counter changes per iteration.
enum SliceFinding {
    /// A bound moves with the counter and the other does not: a new shape per iteration.
    NewShape(String),
    /// Both bounds move with the counter by loop-invariant amounts (`x[i : i + k]`,
    /// `x[cur - 1 : cur]`): a fixed shape at a new offset.
    MovingOffset(String),
}

/// Whether a slice's bounds are both `counter + c` with loop-invariant `c` (`i : i + k`,
/// `cur - 1 : cur`), so that its size is the same on every iteration. A step must be
/// loop-invariant too.
fn fixed_size_slice<'t>(
    slice: Node<'t>,
    counter: &str,
    source: &str,
    invariant: &impl Fn(Node<'t>) -> bool,
) -> bool {
    // `start:stop:step` — tree-sitter keeps the colons as anonymous children, so read the bound
    // in each position.
    let mut positions: [Option<Node<'t>>; 3] = [None; 3];
    let mut position = 0usize;
    let mut cursor = slice.walk();
    for child in slice.children(&mut cursor) {
        if !child.is_named() {
            if syntax::text_is(child, source, ":") {
                position += 1;
            }
            continue;
        }
        if child.is(kind::COMMENT) || position > 2 {
            continue;
        }
        positions[position] = Some(child);
    }
    // `x[:, i::k]` (every k-th column from `i`, interleaved coordinates or channels): with no
    // stop and a loop-invariant step, the start moves with the counter and the size,
    // ceil((n - i) / k), differs by at most one across a loop over the interleaved positions.
    if let (Some(start), None, Some(step)) = (positions[0], positions[1], positions[2]) {
        return invariant(step) && counter_plus_invariant(start, counter, source, invariant);
    }
    let (Some(start), Some(stop)) = (positions[0], positions[1]) else {
        return false;
    };
    positions[2].is_none_or(invariant)
        && counter_plus_invariant(start, counter, source, invariant)
        && counter_plus_invariant(stop, counter, source, invariant)
}

/// Whether `expr` is the counter plus or minus loop-invariant terms (`i`, `i + k`, `cur - 1`,
/// `k + i`), with the counter once and with a plus sign.
fn counter_plus_invariant<'t>(
    expr: Node<'t>,
    counter: &str,
    source: &str,
    invariant: &impl Fn(Node<'t>) -> bool,
) -> bool {
    let expr = syntax::unparenthesize(expr);
    match expr.kind_key() {
        kind::IDENTIFIER => node_text(expr, source) == counter,
        kind::BINARY_OPERATOR => {
            let (Some(left), Some(right), Some(operator)) = (
                expr.field("left"),
                expr.field("right"),
                expr.field("operator"),
            ) else {
                return false;
            };
            match node_text(operator, source) {
                "+" => {
                    (counter_plus_invariant(left, counter, source, invariant) && invariant(right))
                        || (invariant(left)
                            && counter_plus_invariant(right, counter, source, invariant))
                }
                "-" => counter_plus_invariant(left, counter, source, invariant) && invariant(right),
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether `expr` has the same value on every iteration of `loop_node`: integers, names not
/// assigned in the loop's body, `self.<attr>`, and arithmetic on them; never the counter.
fn loop_invariant<'t>(
    context: &Context<'t, '_>,
    expr: Node<'t>,
    counter: &str,
    loop_node: Node<'t>,
) -> bool {
    let source = context.source();
    let expr = syntax::unparenthesize(expr);
    match expr.kind_key() {
        kind::INTEGER => true,
        kind::IDENTIFIER => {
            let name = node_text(expr, source);
            if name == counter {
                return false;
            }
            let Some(body) = loop_node.field("body") else {
                return false;
            };
            let semantic = context.semantic();
            let rebound = semantic
                .function_around(expr)
                .and_then(|function| {
                    semantic.last_assignment_before(function, name, body.end_byte())
                })
                .is_some_and(|value| value.start_byte() >= body.start_byte());
            !rebound && !mentions(expr, counter, source)
        }
        kind::ATTRIBUTE => expr
            .field("object")
            .is_some_and(|object| syntax::text_is(object, source, "self")),
        kind::BINARY_OPERATOR => match (expr.field("left"), expr.field("right")) {
            (Some(left), Some(right)) => {
                loop_invariant(context, left, counter, loop_node)
                    && loop_invariant(context, right, counter, loop_node)
            }
            _ => false,
        },
        _ => false,
    }
}

/// Whether `expr` is `name` or arithmetic on it (`cur`, `pos - 1`, `cur + 1`).
fn mentions(expr: Node<'_>, name: &str, source: &str) -> bool {
    let expr = syntax::unparenthesize(expr);
    match expr.kind_key() {
        kind::IDENTIFIER => node_text(expr, source) == name,
        kind::BINARY_OPERATOR => syntax::sides(expr).any(|side| mentions(side, name, source)),
        _ => false,
    }
}
