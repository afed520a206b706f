//! TPU110: a tensor materialized on one rank only (`if rank == 0: loss.item()`) under TorchTPU,
//! or a PyTorch/XLA collective called on one rank only (`if xm.is_master_ordinal(): xm.rendezvous(...)`).

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Related;
use crate::rules::{helpers, tensor_values};
use crate::semantic::Backend;
use crate::syntax;
use crate::syntax::NodeExt;
use crate::torch_api;

declare_rule! {
    /// ## What it does
    /// In TorchTPU code, checks for tensor materializations — `.item()`, `.tolist()`, `.cpu()`,
    /// `.numpy()`, `print(tensor)`, `torch.save(...)`, a tensor given to a metric logger
    /// (`wandb.log({"loss": loss})`, `writer.add_scalar("loss", loss, step)`) — inside an `if`
    /// that only one rank takes:
    /// `if rank == 0:`, `if dist.get_rank() == 0:`, `if accelerator.is_main_process:`,
    /// `if is_master:` — and, in a training loop, a `return` or `break` such a branch takes
    /// (`if rank == 0 and step >= max_steps: return`): one rank leaves the loop while the others
    /// wait for it in the next step.
    ///
    /// In PyTorch/XLA code, checks for collectives inside such a branch: `xm.rendezvous`,
    /// `xm.all_reduce`, `xm.all_gather`, `xm.reduce_scatter`, `xm.mesh_reduce`,
    /// `xm.optimizer_step`, `xm.reduce_gradients`, `xm.all_to_all`, `xm.collective_permute`,
    /// `xm.broadcast_master_param`, under `if xm.is_master_ordinal():`, `if xr.global_ordinal() == 0:`, ...
    ///
    /// ## Why is this bad?
    /// TorchTPU's distributed guide states the golden rule "Never diverge": in deferred
    /// execution every rank must materialize the same tensors at the same points, because a
    /// materialization flushes pending work that includes collectives. "If one rank runs ahead,
    /// the mesh deadlocks." A `torch.save` or `.item()` run by rank 0 alone hangs the job.
    ///
    /// PyTorch/XLA's PJRT runtime implements `xm.rendezvous` with XLA collectives, and "XLA
    /// does not permit collective operations to run on a subset of workers, all workers must
    /// participate". A rendezvous, an all-reduce or an `xm.optimizer_step` (which all-reduces
    /// the gradients) that only the master process reaches waits for the others forever, or
    /// traces an all-reduce into the master's graph alone. Under PyTorch/XLA a `.item()` or a
    /// `torch.save` on the master is not reported: it executes that process's own graph and
    /// joins no collective (and `xm.save` has had no rendezvous since torch_xla 2.1).
    ///
    /// ## Example
    /// ```python
    /// if dist.get_rank() == 0:
    ///     print(f"loss {loss.item()}")
    ///     torch.save(model.state_dict(), "ckpt.pt")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loss_value = loss.item()  # every rank materializes
    /// state = {k: v.cpu() for k, v in model.state_dict().items()}
    /// if dist.get_rank() == 0:  # only host-side work diverges
    ///     print(f"loss {loss_value}")
    ///     torch.save(state, "ckpt.pt")
    /// ```
    ///
    /// PyTorch/XLA:
    /// ```python
    /// if xm.is_master_ordinal():
    ///     xm.rendezvous("checkpoint")
    ///     total = xm.mesh_reduce("acc", acc, sum)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// total = xm.mesh_reduce("acc", acc, sum)  # every process joins
    /// xm.save(model.state_dict(), path)  # every process calls it; only the master writes
    /// ```
    ///
    /// ## Fix safety
    /// No fix: which work should move out of the branch is the author's decision.
    ///
    /// ## Known problems
    /// Only files whose backend is TorchTPU or PyTorch/XLA are checked (configured, or
    /// detected from imports and device strings). Rank tests are recognised by name
    /// (`rank`, `local_rank`, `get_rank()`, `is_main_process`, `is_master`, `master_process`,
    /// `is_master_ordinal()`, `process_index`, `global_ordinal()`), and only the `if` branch is
    /// inspected. A PyTorch/XLA collective is not reported when the `else` branch makes the same
    /// call, nor a tagged one (`xm.rendezvous(tag)`) when the file calls it with the same tag
    /// elsewhere (the paired `if not xm.is_master_ordinal(): xm.rendezvous(tag)` idiom), even
    /// when both calls sit under the same rank test.
    /// `xm.mark_step()` / `torch_xla.sync()` on one rank are not reported: they hang only when
    /// the pending graph holds a collective, which the rule cannot see.
    ///
    /// ## References
    /// - TorchTPU, `docs/notebooks/distributed_training_101.py`, "Golden rules: Never diverge"
    /// - TorchTPU, *Deferred execution* notebook (what materializes)
    /// - PyTorch/XLA, *PJRT Runtime*, "Changes to xm.rendezvous"
    ///   (https://github.com/pytorch/xla/blob/master/docs/source/learn/_pjrt.md)
    /// - https://github.com/pytorch/xla/issues/2224 (`xm.save` under `is_master_ordinal()`
    ///   hung while `xm.save` held a rendezvous; removed in https://github.com/pytorch/xla/pull/4926)
    pub(crate) static RANK_DIVERGENT_MATERIALIZATION = {
        code: "TPU110",
        name: "rank-divergent-materialization",
        severity: Warning,
        fix: None,
        kinds: ["if_statement"],
        check: check,
    }
}

/// Names that, alone, mean "this is the main process".
const MAIN_PROCESS_FLAGS: &[&str] = &[
    "is_main_process",
    "is_local_main_process",
    "is_master",
    "is_main",
    "master_process",
    "is_master_ordinal",
    "is_rank_zero",
    "is_global_zero",
    "is_world_process_zero",
    "is_local_process_zero",
];

/// Names that hold a rank, compared with a number to pick one process.
const RANK_NAMES: &[&str] = &[
    "rank",
    "local_rank",
    "global_rank",
    "get_rank",
    "get_local_rank",
    "process_index",
    "local_process_index",
    "get_ordinal",
    "get_local_ordinal",
    "global_ordinal",
    "local_ordinal",
];

/// TPU110
fn check<'t>(context: &mut Context<'t, '_>, if_statement: Node<'t>) {
    let backend = context.backend();
    if !matches!(backend, Backend::TorchTpu | Backend::TorchXla) {
        return;
    }
    let Some(condition) = if_statement.field("condition") else {
        return;
    };
    if !is_rank_test(context, condition) {
        return;
    }
    let Some(body) = if_statement.field("consequence") else {
        return;
    };
    if backend == Backend::TorchXla {
        check_xla_collectives(context, if_statement, condition, body);
        return;
    }
    let mut found = Vec::new();
    collect_materializations(context, body, &mut found, 0);
    // `if rank == 0 and step >= max_steps: return` in the training loop: one rank leaves the
    // loop, the others wait for it in the next step's collectives.
    if context.semantic().in_loop()
        && matches!(
            context.hot_path(),
            Some(crate::semantic::HotPath::TrainingLoop | crate::semantic::HotPath::BatchLoop)
        )
    {
        for statement in body.named_nodes() {
            let exit = match statement.kind_key() {
                kind::RETURN_STATEMENT => "An early `return`",
                kind::BREAK_STATEMENT => "A `break` out of the training loop",
                _ => continue,
            };
            found.push((statement, exit.to_string()));
        }
    }
    for (node, what) in found {
        let message = format!("{what} on one rank only: under TorchTPU the other ranks deadlock");
        context
            .report(node.byte_range(), message)
            .related
            .push(Related {
                range: condition.byte_range(),
                message: "the branch only one rank takes".to_string(),
            });
    }
}

/// PyTorch/XLA: a collective (`xm.rendezvous`, `xm.all_reduce`, `xm.optimizer_step`, ...) that
/// only the rank-test branch calls. Not reported when the `else`/`elif` branches of the same `if`
/// make the same call (same callee, same first argument), nor when a tagged collective
/// (`xm.rendezvous(tag)`, `xm.mesh_reduce(tag, ...)`) with that tag is called elsewhere in the
/// file too: the paired idiom `if not xm.is_master_ordinal(): xm.rendezvous(tag)` ... `if
/// xm.is_master_ordinal(): xm.rendezvous(tag)`.
fn check_xla_collectives<'t>(
    context: &mut Context<'t, '_>,
    if_statement: Node<'t>,
    condition: Node<'t>,
    body: Node<'t>,
) {
    let mut calls = Vec::new();
    collect_calls(body, &mut calls, 0);
    let mut other_branches = Vec::new();
    for branch in if_statement.named_nodes() {
        if branch.is_any(&[kind::ELSE_CLAUSE, kind::ELIF_CLAUSE]) {
            collect_calls(branch, &mut other_branches, 0);
        }
    }
    let other_keys: Vec<String> = other_branches
        .into_iter()
        .filter_map(|call| collective_key(context, call).map(|(key, _)| key))
        .collect();
    for call in calls {
        let Some((key, tagged)) = collective_key(context, call) else {
            continue;
        };
        if other_keys.contains(&key) {
            continue;
        }
        let sites = context
            .semantic()
            .file_facts()
            .collective_calls
            .iter()
            .filter(|site| **site == key)
            .count();
        if tagged && sites >= 2 {
            continue;
        }
        let Some((function, _)) = context.call_parts(call) else {
            continue;
        };
        let message = format!(
            "`{}` on one rank only: every PyTorch/XLA process must join a collective, the others hang",
            context.text(function)
        );
        context
            .report(call.byte_range(), message)
            .related
            .push(Related {
                range: condition.byte_range(),
                message: "the branch only one rank takes".to_string(),
            });
    }
}

/// For a call of a PyTorch/XLA collective, `name(first argument)` as the index records it, and
/// whether that argument is a tag ([`torch_api::XLA_TAGGED_COLLECTIVES`]).
fn collective_key<'t>(context: &Context<'t, '_>, call: Node<'t>) -> Option<(String, bool)> {
    let (function, arguments) = context.call_parts(call)?;
    let qualified = context.qualified_name(function)?;
    if !torch_api::is_xla_collective(&qualified) {
        return None;
    }
    let text = syntax::positional_args(arguments)
        .first()
        .map_or("", |first| context.text(*first));
    let tagged = qualified
        .rsplit('.')
        .next()
        .is_some_and(|name| torch_api::XLA_TAGGED_COLLECTIVES.contains(&name));
    Some((format!("{qualified}({text})"), tagged))
}

/// The calls under `node`, outside nested functions, classes and lambdas.
fn collect_calls<'t>(node: Node<'t>, found: &mut Vec<Node<'t>>, depth: usize) {
    if depth > 40 || found.len() > 64 {
        return;
    }
    if node.is_any(&[
        kind::FUNCTION_DEFINITION,
        kind::CLASS_DEFINITION,
        kind::LAMBDA,
    ]) {
        return;
    }
    if node.is(kind::CALL) {
        found.push(node);
    }
    let children: Vec<Node<'t>> = node.named_nodes().collect();
    for child in children {
        collect_calls(child, found, depth + 1);
    }
}

/// `rank == 0`, `dist.get_rank() == 0`, `accelerator.is_main_process`, `not is_master` is not.
fn is_rank_test<'t>(context: &Context<'t, '_>, condition: Node<'t>) -> bool {
    let condition = syntax::unparenthesize(condition);
    match condition.kind_key() {
        kind::BOOLEAN_OPERATOR => {
            let is_and = condition
                .field("operator")
                .is_some_and(|op| context.text_is(op, "and"));
            is_and && syntax::sides(condition).any(|side| is_rank_test(context, side))
        }
        kind::COMPARISON_OPERATOR => {
            let operators = tensor_values::comparison_operators(context, condition);
            if operators != ["=="] {
                return false;
            }
            let operands: Vec<Node<'_>> = condition.named_nodes().collect();
            let has_number = operands.iter().any(|o| o.is(kind::INTEGER));
            has_number
                && operands
                    .iter()
                    .any(|o| last_name_in(context, *o, RANK_NAMES))
        }
        kind::IDENTIFIER | kind::ATTRIBUTE | kind::CALL => {
            last_name_in(context, condition, MAIN_PROCESS_FLAGS)
        }
        _ => false,
    }
}

/// Whether the last name of `a.b.c` / `a.b.c()` is one of `names`.
fn last_name_in<'t>(context: &Context<'t, '_>, expr: Node<'t>, names: &[&str]) -> bool {
    let target = if expr.is(kind::CALL) {
        match context.call_parts(expr) {
            Some((function, _)) => function,
            None => return false,
        }
    } else {
        expr
    };
    syntax::dotted_parts(target, context.source())
        .and_then(|parts| parts.last().copied())
        .is_some_and(|last| names.contains(&last))
}

fn collect_materializations<'t>(
    context: &Context<'t, '_>,
    node: Node<'t>,
    found: &mut Vec<(Node<'t>, String)>,
    depth: usize,
) {
    if depth > 40 || found.len() > 20 {
        return;
    }
    if node.is_any(&[
        kind::FUNCTION_DEFINITION,
        kind::CLASS_DEFINITION,
        kind::LAMBDA,
    ]) {
        return;
    }
    if node.is(kind::CALL)
        && let Some(what) = materialization(context, node)
    {
        found.push((node, what));
        return;
    }
    let children: Vec<Node<'t>> = node.named_nodes().collect();
    for child in children {
        collect_materializations(context, child, found, depth + 1);
    }
}

fn materialization<'t>(context: &Context<'t, '_>, call: Node<'t>) -> Option<String> {
    let (function, arguments) = context.call_parts(call)?;
    // `wandb.log({"loss": loss})`, `writer.add_scalar("loss", loss, step)`: the logger reads
    // each tensor's value.
    if let Some(values) = helpers::metric_logger_values(context, call) {
        return values
            .into_iter()
            .any(|value| tensor_values::is_confident_tensor(context, value))
            .then(|| "Logging a tensor".to_string());
    }
    if let Some(qualified) = context.qualified_name(function) {
        // `torch.save(cpu_state, path)`: tensors already copied to the host on every rank.
        let saves_host_copy = syntax::positional_args(arguments)
            .first()
            .is_some_and(|saved| {
                context.text(*saved).to_ascii_lowercase().contains("cpu")
                    || helpers::holds_host_values(context, *saved)
            });
        if qualified == "torch.save" && !saves_host_copy {
            return Some("`torch.save`".to_string());
        }
        return None;
    }
    if function.is(kind::IDENTIFIER) && context.text_is(function, "print") {
        let prints_tensor = syntax::positional_args(arguments).into_iter().any(|a| {
            if a.is(kind::STRING) {
                tensor_values::fstring_interpolations(a)
                    .into_iter()
                    .any(|e| tensor_values::is_confident_tensor(context, e))
            } else {
                tensor_values::is_confident_tensor(context, a)
            }
        });
        return prints_tensor.then(|| "`print` of a tensor".to_string());
    }
    let (receiver, method) = context.method_call(call)?;
    let method = context.text(method);
    if !matches!(method, "item" | "tolist" | "cpu" | "numpy") {
        return None;
    }
    if method == "item" && arguments.named_child_count() != 0 {
        return None;
    }
    let tensor = if method == "item" {
        helpers::is_probably_device_tensor(context, receiver)
    } else {
        context.fact(receiver).is_tensor() && !helpers::is_on_host(context, receiver)
    };
    tensor.then(|| format!("`.{method}()`"))
}
