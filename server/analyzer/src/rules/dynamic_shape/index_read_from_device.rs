//! TPU311: a device tensor sliced or indexed by a value read back from the device, per step.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::{helpers, tensor_values};
use crate::semantic::{Evidence, ValueKind};
use crate::syntax::{self, NodeExt, Visit, node_text};

declare_rule! {
    /// ## What it does
    /// Checks subscripts of a device tensor, on a hot path, whose slice bound or integer index
    /// is a value read back from the device: a Python number bound to `int(t)` or `t.item()` of
    /// a device tensor in the same function (`ptr = int(self.queue_ptr)`; `queue[:, ptr:ptr + n]`),
    /// an element of `t.tolist()`, such a read written in the subscript (`x[:, : int(n)]`), or a
    /// device tensor used as a slice bound (`x[:, :n]` with `n` a tensor, also a local alias of
    /// a buffer), which Python turns into an integer the same way.
    ///
    /// ## Why is this bad?
    /// A slice bound or an integer index is a constant of the traced graph. PyTorch/XLA bakes
    /// each value into the program it compiles, so a position that changes from step to step
    /// (a ring buffer's write pointer, a length computed on the device) compiles a new graph for
    /// every value it takes, and reading it first waits for the device to run everything
    /// pending. A tensor slice bound does both implicitly: Python calls `__index__`, a
    /// device-to-host read. The host read is reported where it is written (TPU106); this rule
    /// reports the recompilation where the value is used.
    ///
    /// ## Example
    /// ```python
    /// @torch.no_grad()
    /// def _dequeue_and_enqueue(self, keys):
    ///     ptr = int(self.queue_ptr)
    ///     self.queue[:, ptr : ptr + keys.shape[0]] = keys.T
    ///     self.queue_ptr[0] = (ptr + keys.shape[0]) % self.K
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// @torch.no_grad()
    /// def _dequeue_and_enqueue(self, keys):
    ///     positions = self.queue_ptr + torch.arange(keys.shape[0], device=keys.device)
    ///     self.queue.index_copy_(1, positions % self.K, keys.T)
    ///     self.queue_ptr.copy_((self.queue_ptr + keys.shape[0]) % self.K)
    /// ```
    /// positions kept in a device tensor and used through `index_copy_`, `index_select` or
    /// `torch.gather`, so one graph serves every step; a length read from the device becomes a
    /// fixed-size slice and a mask.
    ///
    /// ## Known problems
    /// Only reads written in the same function are followed (a name bound to `int(t)`,
    /// `t.item()` or an element of `t.tolist()`, possibly through arithmetic on such names); a
    /// position carried in a Python attribute (`self.ptr`) or passed in by a caller is not. Only
    /// hot paths are checked: in a loop that post-processes results on the host the read back is
    /// the cost, and the host-sync rules report it.
    ///
    /// ## References
    /// - PyTorch/XLA, *Source of recompilations* (`docs/source/notes/source_of_recompilation.md`:
    ///   shapes and constants of the traced graph must not change between steps)
    /// - PyTorch/XLA, *Troubleshooting*, "Known performance caveats" (`.item()` and `int(t)`
    ///   evaluate the pending graph)
    /// - pytorch/xla#1467: a slice whose bounds are device tensors needs a "fully dynamic
    ///   narrow()" that the graph cannot express
    pub(crate) static INDEX_READ_FROM_DEVICE = {
        code: "TPU311",
        name: "index-read-from-device",
        severity: Warning,
        fix: None,
        kinds: ["subscript"],
        check: check,
    }
}

/// How far a bound is followed through names and arithmetic.
const MAX_DEPTH: usize = 4;

/// TPU311
fn check<'t>(context: &mut Context<'t, '_>, subscript: Node<'t>) {
    if context.hot_path().is_none() || context.semantic().in_cold_code() {
        return;
    }
    let Some(value) = subscript.field("value") else {
        return;
    };
    let mut cursor = subscript.walk();
    let indices: Vec<Node<'t>> = subscript
        .children_by_field_name("subscript", &mut cursor)
        .collect();
    // The cheap structural test first: a slice, or an index that is a name, a call or
    // arithmetic (not a literal, a mask or a tensor of positions, which index on the device).
    let mut found: Option<(Source<'t>, Option<&'t str>)> = None;
    for index in indices {
        if index.is(kind::SLICE) {
            for bound in syntax::named_children(index) {
                if bound.is(kind::COMMENT) {
                    continue;
                }
                if let Some(source) = read_back(context, subscript, bound, true, 0) {
                    found = Some((source, position_name(context, bound)));
                    break;
                }
            }
        } else if let Some(source) = read_back(context, subscript, index, false, 0) {
            found = Some((source, position_name(context, index)));
        }
        if found.is_some() {
            break;
        }
    }
    let Some((source, via)) = found else {
        return;
    };
    // The subscripted tensor may be a hot function's parameter (`forward(self, x)`): the
    // position is what must be a read of the device, and it is checked confidently above.
    if !context.fact(value).is_tensor()
        || helpers::is_on_host(context, value)
        || tensor_values::in_error_or_throttled_path(context, subscript)
    {
        return;
    }
    // One finding per position: the other subscripts by the same name (`ids[:pos]`,
    // `ids[pos:]`, `labels[:pos]` splicing one sequence) have the same cause and the same fix.
    // A tensor position counts only as a slice bound: as an index it gathers on the device.
    let only_slices = matches!(source, Source::TensorBound { .. });
    if let Some(position) = via
        && indexed_by_name_earlier(context, subscript, position, only_slices)
    {
        return;
    }
    let name = helpers::short_code(context.text(value));
    let message = match source {
        Source::HostRead { read, in_slice } => format!(
            "`{name}` is {} by a value read back from the device (`{}`): each new value is a constant of a new graph to compile; keep the position in a device tensor (`index_copy_`, `index_select`)",
            if in_slice { "sliced" } else { "indexed" },
            helpers::short_code(context.text(read)),
        ),
        Source::TensorBound { bound } => format!(
            "`{name}` is sliced by tensor `{}`: the bound is read back to the host and each new value compiles a new graph; slice a fixed size and mask, or index with positions on the device",
            helpers::short_code(context.text(bound)),
        ),
    };
    let severity = context.hot_path_severity();
    context.report(subscript.byte_range(), message).severity = severity;
}

/// Where a subscript's position comes from.
enum Source<'t> {
    /// `int(t)` / `t.item()` of a device tensor, written in the subscript or bound to a name.
    HostRead { read: Node<'t>, in_slice: bool },
    /// A device tensor used directly as a slice bound.
    TensorBound { bound: Node<'t> },
}

/// Whether `expr`, a slice bound (`in_slice`) or an integer index, is (arithmetic on) a value
/// read back from a device tensor.
fn read_back<'t>(
    context: &Context<'t, '_>,
    subscript: Node<'t>,
    expr: Node<'t>,
    in_slice: bool,
    depth: usize,
) -> Option<Source<'t>> {
    if depth > MAX_DEPTH {
        return None;
    }
    let expr = syntax::unparenthesize(expr);
    match expr.kind_key() {
        kind::BINARY_OPERATOR => syntax::sides(expr)
            .find_map(|side| read_back(context, subscript, side, in_slice, depth + 1)),
        kind::UNARY_OPERATOR => expr
            .field("argument")
            .and_then(|argument| read_back(context, subscript, argument, in_slice, depth + 1)),
        kind::CALL => host_read_of_device_tensor(context, expr).then_some(Source::HostRead {
            read: expr,
            in_slice,
        }),
        kind::IDENTIFIER => {
            // A tensor slice bound: Python asks the tensor for its integer value. (A tensor as a
            // plain index gathers on the device and is fine.)
            if in_slice && computed_on_device(context, expr) {
                return Some(Source::TensorBound { bound: expr });
            }
            let semantic = context.semantic();
            let function = semantic.function_around(subscript)?;
            let assigned = semantic.last_assignment_before(
                function,
                node_text(expr, context.source()),
                subscript.start_byte(),
            )?;
            let assigned = syntax::unparenthesize(assigned);
            if assigned.is(kind::CALL) {
                return host_read_of_device_tensor(context, assigned).then_some(Source::HostRead {
                    read: assigned,
                    in_slice,
                });
            }
            // `end = ptr + n`: arithmetic on a read, bound to a name of its own; `start =
            // starts[0]`: an element of a list read back. Only Python arithmetic is followed,
            // not a tensor operation that would keep it on the device.
            if assigned.is_any(&[kind::BINARY_OPERATOR, kind::UNARY_OPERATOR, kind::SUBSCRIPT]) {
                return read_back(context, subscript, assigned, in_slice, depth + 1)
                    .filter(|source| matches!(source, Source::HostRead { .. }));
            }
            None
        }
        // `starts[i]` with `starts = t.tolist()`, or `t.tolist()[i]`: an element of a device
        // tensor read back as a Python list, a number like `int(t[i])`.
        kind::SUBSCRIPT => {
            let list = syntax::unparenthesize(expr.field("value")?);
            let list = if list.is(kind::IDENTIFIER) {
                let semantic = context.semantic();
                let function = semantic.function_around(subscript)?;
                syntax::unparenthesize(semantic.last_assignment_before(
                    function,
                    node_text(list, context.source()),
                    subscript.start_byte(),
                )?)
            } else {
                list
            };
            list_read_of_device_tensor(context, list).then_some(Source::HostRead {
                read: list,
                in_slice,
            })
        }
        kind::ATTRIBUTE if in_slice && computed_on_device(context, expr) => {
            Some(Source::TensorBound { bound: expr })
        }
        _ => None,
    }
}

/// `int(t)`, `t.item()` or `int(t.item())` with `t` a device tensor the index is sure of.
fn host_read_of_device_tensor<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    if let Some((receiver, method)) = context.method_call(call) {
        return context.text_is(method, "item") && computed_on_device(context, receiver);
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return false;
    };
    if !context.text_is(function, "int") || context.fact(function).kind != ValueKind::Unknown {
        return false;
    }
    let positional = syntax::positional_args(arguments);
    let [argument] = positional.as_slice() else {
        return false;
    };
    let argument = syntax::unparenthesize(*argument);
    (argument.is(kind::CALL) && host_read_of_device_tensor(context, argument))
        || computed_on_device(context, argument)
}

/// `t.tolist()` with `t` a device tensor the index is sure of.
fn list_read_of_device_tensor<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    call.is(kind::CALL)
        && context.method_call(call).is_some_and(|(receiver, method)| {
            context.text_is(method, "tolist") && computed_on_device(context, receiver)
        })
}

/// Whether `expr` is a device tensor the file computes or holds (an operation's result, a
/// module's output or buffer, a factory with a device), as opposed to one a parameter's
/// annotation or its callers make a tensor: lengths passed in as `lengths: torch.LongTensor`
/// are often kept on the host (`pack_padded_sequence` wants them there), where reading them
/// costs no device sync.
fn computed_on_device<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    let evidence = context.fact(syntax::unparenthesize(expr)).evidence;
    !matches!(
        evidence,
        Evidence::Annotation | Evidence::GuessedParameter | Evidence::CallSite
    ) && tensor_values::is_confident_tensor(context, expr)
}

/// The name a slice bound or index is written with (`ptr` in `ptr + n`, `pos` in `pos - 1`):
/// the first identifier of its arithmetic, if it is one.
fn position_name<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> Option<&'t str> {
    let expr = syntax::unparenthesize(expr);
    match expr.kind_key() {
        kind::IDENTIFIER => Some(node_text(expr, context.source())),
        // `starts[i]`: the list read back is the position's source.
        kind::SUBSCRIPT => expr
            .field("value")
            .filter(|list| list.is(kind::IDENTIFIER))
            .map(|list| node_text(list, context.source())),
        kind::BINARY_OPERATOR => syntax::sides(expr).find_map(|side| position_name(context, side)),
        kind::UNARY_OPERATOR => expr
            .field("argument")
            .and_then(|argument| position_name(context, argument)),
        _ => None,
    }
}

/// Whether a subscript written earlier in the same function, after `name`'s last binding,
/// already indexes by `name` (`only_slices`: in a slice bound). Runs only when a finding is
/// about to be made.
fn indexed_by_name_earlier<'t>(
    context: &Context<'t, '_>,
    subscript: Node<'t>,
    name: &str,
    only_slices: bool,
) -> bool {
    let semantic = context.semantic();
    let Some(Some(function)) = semantic.function_around(subscript) else {
        return false;
    };
    let source = context.source();
    let from = semantic
        .last_assignment_before(Some(function), name, subscript.start_byte())
        .map_or(function.start_byte(), |value| value.end_byte());
    let until = subscript.start_byte();
    syntax::any_in_subtree(function, usize::MAX, |node| {
        if node.end_byte() <= from || node.start_byte() >= until {
            return Visit::Skip;
        }
        if node.id() != function.id()
            && node.is_any(&[kind::FUNCTION_DEFINITION, kind::CLASS_DEFINITION])
        {
            return Visit::Skip;
        }
        if node.is(kind::SUBSCRIPT) && node.start_byte() >= from {
            let mut cursor = node.walk();
            let by_name = node
                .children_by_field_name("subscript", &mut cursor)
                .any(|index| {
                    (!only_slices || index.is(kind::SLICE))
                        && syntax::mentions_identifier(index, name, source)
                });
            if by_name {
                return Visit::Found;
            }
        }
        Visit::Enter
    })
}
