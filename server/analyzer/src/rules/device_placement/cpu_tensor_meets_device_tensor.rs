//! TPU405: a tensor created on the CPU inside `forward` combined with tensors on the device.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Fix, Related};
use crate::rules::tpu_api;
use crate::semantic::{Device, Evidence, Fact};
use crate::source::TextRange;
use crate::syntax::NodeExt;
use crate::syntax::{self, node_text};
use crate::torch_api;

declare_rule! {
    /// ## What it does
    /// Checks, in code that runs every step (a module's `forward`, a step or loss function, the
    /// training loop, and the functions they call), for a binary operation, `torch.cat` / `torch.stack`
    /// or a matmul that combines a tensor created without `device=` (so on the CPU) with a
    /// forward input, a parameter or a buffer (on the model's device). The diagnostic points at
    /// the place where the CPU tensor was created, also when a helper of the same file returned it
    /// (`mask = make_mask(n)` with `return torch.ones(n)`).
    ///
    /// ## Why is this bad?
    /// Factories such as `torch.zeros(n)`, `torch.arange(n)` or `torch.ones(...)` allocate on the
    /// CPU unless told otherwise. Concatenating or stacking it with device tensors (`torch.cat`,
    /// `torch.stack`) raises (an error); arithmetic and matmuls copy it to the device on every call
    /// (measured on torch_xla 2.9; a warning). Mixing that tensor with device tensors raises on PyTorch/XLA
    /// (`Input tensor is not an XLA tensor: torch.FloatTensor`) and on TorchTPU (device
    /// mismatch); on GPUs the same line raises `Expected all tensors to be on the same device`.
    /// A tensor stored as a plain attribute in `__init__` has the same problem: `model.to(device)`
    /// moves parameters and registered buffers, not plain attributes.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x):
    ///     positions = torch.arange(x.shape[1])
    ///     return x + self.embed(positions) + torch.zeros(x.shape[-1])
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def forward(self, x):
    ///     positions = torch.arange(x.shape[1], device=x.device)
    ///     return x + self.embed(positions) + torch.zeros(x.shape[-1], device=x.device)
    /// ```
    /// For constants built in `__init__`, `self.register_buffer("name", tensor)`.
    ///
    /// ## Fix safety
    /// When the CPU tensor was created in the same `forward` and the device tensor is a plain
    /// name or attribute, the fix adds `device=<that>.device` to the factory. It is unsafe: the
    /// factory's other uses now see a device tensor too.
    ///
    /// ## Known problems
    /// Cold code (setup, once-per-run reports) is not checked. Zero-dimensional tensors
    /// (`torch.tensor(2.0)`), which PyTorch allows in mixed-device arithmetic, are reported like
    /// other arithmetic: as a per-step copy.
    ///
    /// ## References
    /// - PyTorch/XLA, *PyTorch on XLA devices* (https://github.com/pytorch/xla/blob/master/docs/source/learn/pytorch-on-xla-devices.md): "will throw an
    ///   error since the torch.nn.Linear module is on the CPU"; https://github.com/pytorch/xla/issues/3108,
    ///   https://github.com/pytorch/xla/issues/2960, https://github.com/pytorch/xla/issues/899
    /// - TorchTPU `docs/notebooks/get_started_tpu.py` (https://github.com/google-pytorch/torch_tpu): tensors must be on the `"tpu"` device
    pub(crate) static CPU_TENSOR_MEETS_DEVICE_TENSOR = {
        code: "TPU405",
        name: "cpu-tensor-meets-device-tensor",
        severity: Error,
        fix: Sometimes,
        kinds: ["binary_operator", "augmented_assignment", "comparison_operator", "call"],
        calls: COMBINING_FUNCTIONS,
        check: check,
    }
}

const COMBINING_FUNCTIONS: &[&str] = &[
    "torch.cat",
    "torch.concat",
    "torch.concatenate",
    "torch.stack",
    "torch.hstack",
    "torch.vstack",
    "torch.matmul",
    "torch.mm",
    "torch.bmm",
    "torch.add",
    "torch.mul",
    "torch.sub",
    "torch.div",
    "torch.maximum",
    "torch.minimum",
];

/// TPU405
fn check<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    // Forward, step and loss code, loops and what they call: every step copies the tensor.
    if context.hot_path().is_none() {
        return;
    }
    let operands: Vec<Node<'_>> = match node.kind_name() {
        // `x * scale` and `x *= scale`.
        "binary_operator" | "augmented_assignment" => {
            let (Some(left), Some(right)) = (node.field("left"), node.field("right")) else {
                return;
            };
            vec![left, right]
        }
        // `torch.arange(n)[None, :] >= lengths[:, None]`: an elementwise comparison combines its
        // operands like arithmetic does. `is` / `in` compare Python objects, not elements.
        "comparison_operator" => {
            if is_identity_or_membership(context, node) {
                return;
            }
            node.named_nodes().collect()
        }
        _ => {
            let Some(qualified) = context.semantic().call_qualified_name(node) else {
                return;
            };
            if !COMBINING_FUNCTIONS.contains(&qualified.as_str()) {
                return;
            }
            let Some((_, arguments)) = context.call_parts(node) else {
                return;
            };
            let positional = syntax::positional_args(arguments);
            let mut operands = Vec::new();
            for argument in positional {
                if matches!(argument.kind_name(), "list" | "tuple") {
                    operands.extend(argument.named_nodes());
                } else {
                    operands.push(argument);
                }
            }
            operands
        }
    };
    let facts: Vec<(Node<'_>, Fact)> = operands
        .iter()
        .map(|operand| (*operand, context.fact(*operand)))
        .collect();
    let Some((device_operand, _)) = facts
        .iter()
        .find(|(_, fact)| fact.is_tensor() && fact.device == Device::Accelerator)
    else {
        return;
    };
    let Some((cpu_operand, cpu_fact)) = facts
        .iter()
        .find(|(_, fact)| fact.is_tensor() && fact.device == Device::Cpu)
    else {
        return;
    };
    // The CPU tensor's own fact: through `0.0 * positions[None, :, None]` to `positions`.
    let cpu_fact = cpu_source(context, *cpu_operand, 0).unwrap_or(*cpu_fact);
    let Some(origin) = cpu_fact.origin_range() else {
        return;
    };
    let Some((factory, factory_function)) = cpu_factory_at(context, origin.clone()) else {
        return;
    };
    // Nested operations report once, at the innermost combination.
    if cpu_operand.kind_name() == "binary_operator"
        || device_operand.kind_name() == "binary_operator"
    {
        let inner_cpu = operand_is_combination_with_cpu(context, *cpu_operand);
        if inner_cpu {
            return;
        }
    }
    let factory_name = context
        .semantic()
        .call_qualified_name(factory)
        .unwrap_or_default();
    let from_helper = cpu_fact.evidence == Evidence::Summary;
    let in_same_function = !from_helper
        && context
            .enclosing(node, &["function_definition"])
            .map(|f| f.byte_range())
            == factory_function.map(|f| f.byte_range());
    let source = context.source();
    let device_text = node_text(*device_operand, source);
    let fix = if in_same_function
        && syntax::dotted_parts(*device_operand, source).is_some()
        && let Some((_, factory_arguments)) = context.call_parts(factory)
    {
        let edit =
            tpu_api::insert_argument(factory_arguments, &format!("device={device_text}.device"));
        Some(Fix::unsafe_edit(
            format!("Create it with `device={device_text}.device`"),
            vec![edit],
        ))
    } else {
        None
    };
    let helper_name = factory_function
        .and_then(|f| f.field("name"))
        .map(|n| node_text(n, source))
        .unwrap_or("a helper");
    let message = if from_helper {
        format!(
            "`{helper_name}` returns a CPU tensor (`{factory_name}` without `device=`) that meets device tensor `{}`",
            crate::rules::helpers::short_code(device_text)
        )
    } else if in_same_function {
        format!(
            "CPU tensor from `{factory_name}` without `device=` meets device tensor `{}`",
            crate::rules::helpers::short_code(device_text)
        )
    } else {
        format!(
            "Tensor attribute from `{factory_name}` stays on the CPU when the model moves; register it as a buffer"
        )
    };
    let related_message = if from_helper {
        format!("`{helper_name}` creates it on the CPU here")
    } else if in_same_function {
        "created on the CPU here".to_string()
    } else {
        "plain tensor attribute created here".to_string()
    };
    // A list op (`torch.cat`, `torch.stack`) raises; arithmetic and matmuls copy the CPU tensor to
    // the device on every call (measured on torch_xla 2.9): a per-step cost, not an error.
    let raises = node.kind_name() == "call"
        && context
            .semantic()
            .call_qualified_name(node)
            .is_some_and(|q| RAISING_COMBINATIONS.contains(&q.as_str()));
    // Created in this function: report at the factory (where the fix goes), once per factory.
    let (range, related) = if in_same_function {
        (
            factory.byte_range(),
            Related {
                range: node.byte_range(),
                message: "meets a device tensor here".to_string(),
            },
        )
    } else {
        (
            node.byte_range(),
            Related {
                range: factory.byte_range(),
                message: related_message,
            },
        )
    };
    let diagnostic = context.report(range, message);
    diagnostic.related.push(related);
    diagnostic.fix = fix;
    if !raises {
        diagnostic.severity = crate::diagnostic::Severity::Warning;
    }
}

/// Combinations that raise with a CPU operand instead of copying it.
const RAISING_COMBINATIONS: &[&str] = &[
    "torch.cat",
    "torch.concat",
    "torch.concatenate",
    "torch.stack",
    "torch.hstack",
    "torch.vstack",
];

/// The fact of the CPU tensor inside an operand: the operand itself, or for an arithmetic
/// expression or a subscript, the CPU tensor it is computed from.
fn cpu_source<'t>(context: &Context<'t, '_>, operand: Node<'t>, depth: usize) -> Option<Fact> {
    if depth > 8 {
        return None;
    }
    let operand = syntax::unparenthesize(operand);
    match operand.kind_name() {
        "binary_operator" => [operand.field("left"), operand.field("right")]
            .into_iter()
            .flatten()
            .find_map(|side| {
                let fact = context.fact(side);
                (fact.is_tensor() && fact.device == Device::Cpu)
                    .then(|| cpu_source(context, side, depth + 1))
                    .flatten()
            }),
        "subscript" => operand
            .field("value")
            .and_then(|value| cpu_source(context, value, depth + 1)),
        _ => {
            let fact = context.fact(operand);
            (fact.is_tensor() && fact.device == Device::Cpu).then_some(fact)
        }
    }
}

/// The torch factory call (without `device=`, not zero-dimensional) at `origin`, and the function
/// that contains it, as the index recorded them when the value was bound (the factory may lie
/// outside the current node's ancestors: an `__init__` attribute).
fn cpu_factory_at<'t>(
    context: &Context<'t, '_>,
    origin: TextRange,
) -> Option<(Node<'t>, Option<Node<'t>>)> {
    let semantic = context.semantic();
    let node = semantic.origin_node((origin.start, origin.end))?;
    let function = semantic.origin_function((origin.start, origin.end));
    if node.kind_name() != "call" {
        return None;
    }
    let qualified = context.semantic().call_qualified_name(node)?;
    let factory = qualified.strip_prefix("torch.")?;
    // Factories that allocate on the default device (`torch.from_numpy` shares NumPy's memory).
    if !torch_api::TENSOR_FACTORIES.contains(&factory) || factory == "from_numpy" {
        return None;
    }
    let (_, arguments) = context.call_parts(node)?;
    if context.keyword_arg(arguments, "device").is_some() || syntax::has_splat(arguments) {
        return None;
    }
    Some((node, function))
}

/// Whether `operand` is itself a binary operation that combines the same CPU tensor (reported there).
fn operand_is_combination_with_cpu<'t>(context: &Context<'t, '_>, operand: Node<'t>) -> bool {
    let operand = syntax::unparenthesize(operand);
    if operand.kind_name() != "binary_operator" {
        return false;
    }
    let (Some(left), Some(right)) = (operand.field("left"), operand.field("right")) else {
        return false;
    };
    let (l, r) = (context.fact(left), context.fact(right));
    let cpu = |f: &Fact| f.is_tensor() && f.device == Device::Cpu;
    let dev = |f: &Fact| f.is_tensor() && f.device == Device::Accelerator;
    (cpu(&l) && dev(&r)) || (dev(&l) && cpu(&r))
}

/// `x is None`, `k in d`, `a is not b`: Python comparisons of objects, not of tensor elements.
fn is_identity_or_membership<'t>(context: &Context<'t, '_>, comparison: Node<'t>) -> bool {
    let mut cursor = comparison.walk();
    let operators: Vec<Node<'t>> = comparison
        .children(&mut cursor)
        .filter(|child| !child.is_named())
        .collect();
    operators.into_iter().any(|operator| {
        let text = context.text(operator);
        text.starts_with("is") || text.ends_with("in")
    })
}
