//! TPU407: `torch.zeros(...).to(device)`: created on the host, then copied.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::rules::{helpers, tpu_api};
use crate::syntax::NodeExt;
use crate::syntax::{self, node_text};
use crate::torch_api::{RANDOM_FACTORIES, SHAPE_FACTORIES};

declare_rule! {
    /// ## What it does
    /// Checks for a tensor factory without `device=` whose result is immediately moved with
    /// `.to(device)`, such as `torch.randn(8, 128).to(device)`, also through arithmetic with
    /// numbers (`(2 * torch.rand(n, 1) - 1).to(device)`).
    ///
    /// ## Why is this bad?
    /// The factory runs on the host, allocates a host tensor, and `.to()` copies it to the TPU.
    /// Passing `device=` creates the tensor on the device directly: no host work, no transfer.
    /// In a training step this is a host-to-device copy every iteration.
    ///
    /// ## Example
    /// ```python
    /// noise = torch.randn(batch, 4, 64, 64).to(device)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// noise = torch.randn(batch, 4, 64, 64, device=device)
    /// ```
    ///
    /// ## Fix safety
    /// The fix moves the device into the factory. It is safe for deterministic factories
    /// (`zeros`, `ones`, `full`, `arange`, `eye`, …) and unsafe for random ones
    /// (`rand`, `randn`, `randint`, `randperm`): the device's random generator produces different
    /// numbers than the CPU's. A factory with `requires_grad=` is also unsafe (the result becomes
    /// a leaf tensor).
    ///
    /// ## Known problems
    /// `torch.tensor(data)` and `torch.as_tensor(data)` are not reported: their data are Python
    /// objects on the host, so the host-to-device copy happens whatever `device=` says, and
    /// moving the device into the call saves nothing.
    /// Random factories are reported only on hot paths and never with `generator=`: off the hot
    /// path, drawing on the host is usually deliberate (the same numbers on every device).
    /// Only `.to(...)` arguments that clearly name a device are recognised (`device`, `dev`,
    /// `x.device`, `torch.device(...)`, a device string, `torch_xla.device()`), never a dtype.
    ///
    /// ## References
    /// - https://github.com/pytorch/xla/issues/8861 (create on the CPU, then move)
    /// - TorchTPU `docs/notebooks/advanced_compile.py` (https://github.com/google-pytorch/torch_tpu): allocate directly on the device
    /// - https://pytorch.org/docs/stable/generated/torch.tensor.html (`torch.tensor` always
    ///   copies `data`)
    pub(crate) static FACTORY_THEN_MOVE = {
        code: "TPU407",
        name: "factory-then-move",
        severity: Warning,
        fix: Always,
        kinds: ["call"],
        calls: ["to"],
        check: check,
    }
}

/// TPU407
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((receiver, method)) = context.method_call(call) else {
        return;
    };
    if !context.text_is(method, "to") {
        return;
    }
    // `(2 * torch.rand(n, 1) - 1).to(device)`: the factory inside arithmetic with Python numbers
    // is drawn on the host too; the fix places the factory, the arithmetic follows it.
    let moved = receiver;
    let Some(receiver) = factory_under_number_arithmetic(moved, 0) else {
        return;
    };
    let Some(qualified) = context.semantic().call_qualified_name(receiver) else {
        return;
    };
    let Some(factory) = qualified
        .strip_prefix("torch.")
        .filter(|f| SHAPE_FACTORIES.contains(f))
    else {
        return;
    };
    let (Some((_, factory_arguments)), Some((_, to_arguments))) =
        (context.call_parts(receiver), context.call_parts(call))
    else {
        return;
    };
    let source = context.source();
    if context.keyword_arg(factory_arguments, "device").is_some()
        || syntax::has_splat(factory_arguments)
        || syntax::has_splat(to_arguments)
    {
        return;
    }
    let Some(device) = device_argument(context, to_arguments) else {
        return;
    };
    // `.to(device, dtype)` / `.to(device, copy=True)`: more than a move.
    let extra = to_arguments
        .named_nodes()
        .filter(|child| child.is_not(kind::COMMENT) && child.id() != device.id())
        .any(|child| {
            let allowed_keyword = child.is(kind::KEYWORD_ARGUMENT)
                && (child
                    .field("name")
                    .is_some_and(|n| syntax::text_is(n, source, "non_blocking"))
                    || child.field("value").is_some_and(|v| v.id() == device.id()));
            !allowed_keyword
        });
    if extra {
        return;
    }
    // Random tensors drawn on the host and then moved are often deliberate (the same numbers on
    // every device, a CPU `generator=`): only a per-step copy is worth reporting.
    if RANDOM_FACTORIES.contains(&factory)
        && (context.hot_path().is_none()
            || context
                .keyword_arg(factory_arguments, "generator")
                .is_some())
    {
        return;
    }
    let device_text = context.text(device).to_string();
    let unsafe_fix = RANDOM_FACTORIES.contains(&factory)
        || context
            .keyword_arg(factory_arguments, "requires_grad")
            .is_some();
    let edits = vec![
        tpu_api::insert_argument(factory_arguments, &format!("device={device_text}")),
        Edit::delete(moved.end_byte()..call.end_byte()),
    ];
    let applicability = if unsafe_fix {
        Applicability::Unsafe
    } else {
        Applicability::Safe
    };
    let message = format!(
        "`torch.{factory}(...)` is created on the host, then copied to `{}`{}",
        helpers::short_code(&device_text),
        helpers::hot_path_suffix(context)
    );
    let severity = context.hot_path_severity();
    let diagnostic = context.report(call.byte_range(), message);
    diagnostic.severity = severity;
    diagnostic.fix = Some(Fix::new(
        applicability,
        format!(
            "Pass `device={}` to `torch.{factory}`",
            helpers::short_code(&device_text)
        ),
        edits,
    ));
}

/// The call that `.to(...)` moves: the receiver itself, or the one call inside arithmetic whose
/// other operands are number literals (`(2 * torch.rand(n) - 1)`, `torch.randn(n) * 0.02`).
fn factory_under_number_arithmetic(node: Node<'_>, depth: usize) -> Option<Node<'_>> {
    let node = syntax::unparenthesize(node);
    match node.kind_key() {
        kind::CALL => Some(node),
        kind::BINARY_OPERATOR | kind::UNARY_OPERATOR if depth < 4 => {
            let mut calls = node.named_nodes().filter(|operand| {
                !matches!(
                    syntax::unparenthesize(*operand).kind_name(),
                    "integer" | "float"
                )
            });
            let call = calls.next()?;
            calls.next().is_none().then_some(())?;
            factory_under_number_arithmetic(call, depth + 1)
        }
        _ => None,
    }
}

/// The `.to(...)` argument that names a device, if it clearly does.
fn device_argument<'t>(context: &Context<'t, '_>, arguments: Node<'t>) -> Option<Node<'t>> {
    let candidate = context
        .keyword_arg(arguments, "device")
        .or_else(|| syntax::positional_args(arguments).first().copied())?;
    if syntax::positional_args(arguments).len() > 1 {
        return None;
    }
    is_device_expression(context, candidate).then_some(candidate)
}

/// `device`, `self.device`, `x.device`, `dev`, `"xla"`, `torch.device(...)`, `xm.xla_device()`.
pub(crate) fn is_device_expression<'t>(context: &Context<'t, '_>, node: Node<'t>) -> bool {
    let source = context.source();
    if let Some(text) = syntax::string_value(node, source) {
        let kind = text.split(':').next().unwrap_or("");
        return matches!(kind, "cuda" | "cpu" | "xla" | "tpu" | "mps");
    }
    match node.kind_key() {
        kind::IDENTIFIER => {
            let name = node_text(node, source).to_ascii_lowercase();
            name == "dev" || name.ends_with("device")
        }
        kind::ATTRIBUTE => node.field("attribute").is_some_and(|a| {
            node_text(a, source)
                .to_ascii_lowercase()
                .ends_with("device")
        }),
        kind::CALL => context
            .semantic()
            .call_qualified_name(node)
            .is_some_and(|q| {
                matches!(
                    q.as_str(),
                    "torch.device"
                        | "torch_xla.device"
                        | "torch_xla.core.xla_model.xla_device"
                        | "torch.accelerator.current_accelerator"
                )
            }),
        _ => false,
    }
}
