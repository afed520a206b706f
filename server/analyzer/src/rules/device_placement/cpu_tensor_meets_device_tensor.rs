//! TPU405: a tensor created on the CPU inside `forward` combined with tensors on the device.

use crate::kind;
use crate::word_list::{WordList, word_list};
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Fix, Related};
use crate::rules::tpu_api;
use crate::semantic::{Device, Evidence, Fact, ValueKind};
use crate::source::TextRange;
use crate::syntax::NodeExt;
use crate::syntax::{self, node_text};
use crate::torch_api;

declare_rule! {
    /// ## What it does
    /// Checks, in code that runs every step (a module's `forward`, a step or loss function, the
    /// training loop, and the functions they call), for a tensor created without `device=` (so
    /// on the CPU) that meets a forward input, a parameter or a buffer (on the model's device):
    /// in a binary operation or comparison, `torch.cat` / `torch.stack`, a matmul, `torch.where`
    /// or an indexing op (`gather`, `index_select`, `masked_fill`, `scatter`, … as functions or
    /// methods), in an index assignment (`preds[i * n:(i + 1) * n] = logits.argmax(-1)` into a
    /// host buffer, or a host tensor written into a device one), as an argument of a `torch.nn.functional` op (positional or keyword:
    /// `F.cross_entropy(logits, y, weight=w)`), or as an input of a submodule, positional or keyword
    /// (`self.pos_emb(positions)`, `self.encoder(h, mask=causal)`); and for a `torch.nn` module built with such a tensor and never
    /// moved (`criterion = nn.CrossEntropyLoss(weight=torch.tensor(w))`) that is applied to device
    /// tensors. The diagnostic
    /// points at the place where the CPU tensor was created, also when a helper of the same file
    /// returned it (`mask = make_mask(n)` with `return torch.ones(n)`), and through what the
    /// function computed from it on the host: arithmetic with Python numbers, tensor methods, and
    /// torch ops that follow their tensor arguments (`torch.stack([xx, yy])` reports each host
    /// factory it is built from; `yy, xx = torch.meshgrid(sy, sx)` leaves each output where its
    /// input is).
    ///
    /// ## Why is this bad?
    /// Factories such as `torch.zeros(n)`, `torch.arange(n)` or `torch.ones(...)` allocate on the
    /// CPU unless told otherwise. Measured on torch_xla 2.9 (`docs/precision.md`, "TPU405
    /// measured"): elementwise `+ - * /` (operators, in-place forms, `torch.add` and the `add`
    /// method) copy the CPU tensor to the device on every call (a warning); everything else
    /// raises `Expected XLA tensor. Got: torch.FloatTensor` (an error): comparisons, `@` and
    /// `torch.matmul`, `torch.cat` / `torch.stack`, `torch.where`, `gather`, `index_select`,
    /// `scatter`, a `masked_fill` mask, and a CPU tensor passed to an `nn.Linear` or
    /// `nn.Embedding` on the device. Functional ops differ: `F.cross_entropy`'s `weight` and
    /// `F.scaled_dot_product_attention`'s `attn_mask` are copied every call, `F.linear`,
    /// `F.embedding` and `F.mse_loss` raise; they are reported as warnings. An index assignment
    /// copies across devices (a warning): a device value written into a host buffer (an
    /// evaluation loop collecting predictions in `torch.zeros(n)`) makes each step wait for the
    /// device and copy the value to the host, as `.cpu()` does (pytorch/xla#894: "The tensors
    /// should live on the `device`"). On TorchTPU and on GPUs the same lines raise a device
    /// mismatch. A tensor stored as a plain attribute in `__init__` has the same problem:
    /// `model.to(device)` moves parameters and registered buffers, not plain attributes; nor
    /// does it move a tensor made at module level (`class_weights = torch.tensor(w)` given to the
    /// loss as `weight=`), which is reported where it meets the device, as an attribute is.
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
    /// (`torch.tensor(2.0)`, `torch.tensor(torch.finfo(dtype).min)`) are read as scalars and
    /// cached: arithmetic, comparisons and `masked_fill` values with them cost one transfer in
    /// a run, so they are reported only in `torch.cat` / `torch.stack`, `torch.where`, `lerp`
    /// and submodule calls, which raise. A zero-dimensional tensor whose value changes every step
    /// is copied every step and is not reported. Factories without elements (`torch.empty([0])`)
    /// are not reported. Modules built from a parameterless `torch.nn` class (`nn.Dropout`,
    /// losses, activations, pooling) pass a CPU input through without raising and are not
    /// reported.
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
        kinds: ["binary_operator", "augmented_assignment", "assignment", "comparison_operator", "call"],
        check: check,
    }
}

const COMBINING_FUNCTIONS: WordList = word_list![
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
    "torch.where",
    "torch.gather",
    "torch.index_select",
    "torch.masked_select",
    "torch.take_along_dim",
];

/// TPU405
fn check<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    // Forward, step and loss code, loops and what they call: every step copies the tensor.
    if context.hot_path().is_none() {
        return;
    }
    // The device side is an operand with a device-tensor fact, or, for a call of a submodule
    // (`self.pos_emb(positions)`), the module itself: the model's parameters are on the device.
    let mut device_module: Option<Node<'_>> = None;
    let operands: Vec<Node<'_>> = match node.kind_key() {
        // `preds[i * n:(i + 1) * n] = logits.argmax(-1)`: the written tensor (through its
        // subscript) and the value. Plain bindings (`x = ...`) combine nothing.
        kind::ASSIGNMENT => {
            let (Some(left), Some(right)) = (node.field("left"), node.field("right")) else {
                return;
            };
            if left.is_not(kind::SUBSCRIPT) {
                return;
            }
            vec![left, right]
        }
        // `x * scale` and `x *= scale`.
        kind::BINARY_OPERATOR | kind::AUGMENTED_ASSIGNMENT => {
            let (Some(left), Some(right)) = (node.field("left"), node.field("right")) else {
                return;
            };
            vec![left, right]
        }
        // `torch.arange(n)[None, :] >= lengths[:, None]`: an elementwise comparison combines its
        // operands like arithmetic does. `is` / `in` compare Python objects, not elements.
        kind::COMPARISON_OPERATOR => {
            if crate::semantic::is_identity_or_membership(node, context.source()) {
                return;
            }
            node.named_nodes().collect()
        }
        _ => {
            let Some((function, arguments)) = context.call_parts(node) else {
                return;
            };
            let positional = syntax::positional_args(arguments);
            let qualified = context.semantic().call_qualified_name(node);
            if qualified
                .as_deref()
                .is_some_and(|q| COMBINING_FUNCTIONS.contains(&q))
            {
                syntax::spread_sequences(positional)
            } else if qualified
                .as_deref()
                .is_some_and(|q| q.starts_with("torch.nn.functional."))
            {
                // `F.cross_entropy(logits, labels, weight=class_weights)`: every tensor argument,
                // positional or keyword.
                syntax::with_keyword_values(positional, arguments)
            } else if let Some((receiver, method)) = syntax::method_call(node)
                && torch_api::DEVICE_MATCHING_METHODS.contains(&node_text(method, context.source()))
            {
                // `scores.masked_fill(mask == 0, -inf)`: the receiver and its tensor arguments;
                // `counts.index_put_((rows, cols), ones)`: each index of the tuple too.
                let mut operands = vec![receiver];
                operands.extend(syntax::spread_sequences(positional));
                operands
            } else {
                // A submodule (`self.pos_emb`) moves with `model.to(device)` wherever it was
                // built; another module counts when it is not known to stay on the host.
                let callee = context.fact(function);
                let submodule = syntax::dotted_parts(function, context.source())
                    .is_some_and(|parts| parts.len() == 2 && parts[0] == "self");
                if callee.kind == ValueKind::Module && callee.device == Device::Cpu && !submodule {
                    report_host_module_tensor(context, node, function, &callee, &positional);
                }
                if callee.kind != ValueKind::Module
                    || callee.device == Device::Cuda
                    || (callee.device == Device::Cpu && !submodule)
                    || positional.is_empty()
                    || builds_parameterless_module(context, &callee)
                {
                    return;
                }
                device_module = Some(function);
                // `self.encoder(h, mask=causal)`: keyword tensors meet the module's parameters
                // too.
                syntax::with_keyword_values(positional, arguments)
            }
        }
    };
    let facts: Vec<(Node<'_>, Fact)> = operands
        .iter()
        .map(|operand| (*operand, context.fact(*operand)))
        .collect();
    let device_operand = match device_module {
        Some(module) => module,
        None => {
            let Some((device_operand, _)) = facts
                .iter()
                .find(|(_, fact)| fact.is_tensor() && fact.device == Device::Accelerator)
            else {
                return;
            };
            *device_operand
        }
    };
    let device_operand = &device_operand;
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
    let (factories, factory_function) = cpu_factories_at(context, origin.clone(), node);
    // Nested operations report once, at the innermost combination.
    if (cpu_operand.is(kind::BINARY_OPERATOR) || device_operand.is(kind::BINARY_OPERATOR))
        && operand_is_combination_with_cpu(context, *cpu_operand)
    {
        return;
    }
    let from_helper = cpu_fact.evidence == Evidence::Summary;
    let in_same_function = !from_helper
        && context
            .enclosing(node, &["function_definition"])
            .map(|f| f.byte_range())
            == factory_function.map(|f| f.byte_range());
    // Each factory of this function gets its `device=` (reported at the factory); elsewhere the
    // report is at this combination, once.
    let count = if in_same_function { factories.len() } else { 1 };
    for factory in factories.into_iter().take(count) {
        report_factory(
            context,
            node,
            Met {
                operand: *device_operand,
                module: device_module.is_some(),
                written: node.is(kind::ASSIGNMENT).then(|| {
                    if node
                        .field("left")
                        .is_some_and(|left| left.byte_range() == cpu_operand.byte_range())
                    {
                        Written::DeviceIntoHost
                    } else {
                        Written::HostIntoDevice
                    }
                }),
            },
            factory,
            factory_function,
            from_helper,
            in_same_function,
        );
    }
}

/// What the host tensor meets: a device tensor, or a module (`operand` is then its callee) whose
/// parameters are on the device.
struct Met<'t> {
    operand: Node<'t>,
    module: bool,
    /// An index assignment, and which way it copies.
    written: Option<Written>,
}

/// The direction of an index assignment across devices.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Written {
    /// `host_buffer[i] = device_value`: each write waits for the device and copies to the host.
    DeviceIntoHost,
    /// `device_batch[i] = host_factory`: each write copies the host tensor to the device.
    HostIntoDevice,
}

/// Reports one host factory whose tensor meets the device at `node`.
fn report_factory<'t>(
    context: &mut Context<'t, '_>,
    node: Node<'t>,
    met: Met<'t>,
    factory: Node<'t>,
    factory_function: Option<Node<'t>>,
    from_helper: bool,
    in_same_function: bool,
) {
    let device_operand = &met.operand;
    let device_module = met.module.then_some(met.operand);
    let factory_name = context
        .semantic()
        .call_qualified_name(factory)
        .unwrap_or_default();
    let source = context.source();
    let device_text = node_text(*device_operand, source);
    // An index assignment's device value is usually computed later in the loop than the
    // buffer it is written into: `device=<value>.device` at the factory would name it before
    // it exists.
    let fix = if in_same_function
        && device_module.is_none()
        && node.is_not(kind::ASSIGNMENT)
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
    // Made outside any function (a module-level constant), not in a helper or a method.
    let module_level = !from_helper
        && factory_function.is_none()
        && context.enclosing(factory, &["class_definition"]).is_none();
    let helper_name = factory_function
        .and_then(|f| f.field("name"))
        .map(|n| node_text(n, source))
        .unwrap_or("a helper");
    // What the CPU tensor meets: a device tensor, or a submodule whose parameters are on the
    // device.
    let met = if met.written == Some(Written::DeviceIntoHost) {
        format!(
            "is written with device tensor `{}`: each write waits for the device and copies the value to the host",
            crate::rules::helpers::short_code(device_text)
        )
    } else if met.written == Some(Written::HostIntoDevice) {
        format!(
            "is written into device tensor `{}`: each write copies it to the device",
            crate::rules::helpers::short_code(device_text)
        )
    } else if device_module.is_some() {
        format!(
            "is passed to module `{}` on the device",
            crate::rules::helpers::short_code(device_text)
        )
    } else {
        format!(
            "meets device tensor `{}`",
            crate::rules::helpers::short_code(device_text)
        )
    };
    let message = if from_helper {
        format!(
            "`{helper_name}` returns a CPU tensor (`{factory_name}` without `device=`) that {met}"
        )
    } else if in_same_function {
        format!("CPU tensor from `{factory_name}` without `device=` {met}")
    } else if module_level {
        // `class_weights = torch.tensor(w)` at module level, then `weight=class_weights` in the
        // loss: no model move reaches a global.
        format!(
            "CPU tensor from `{factory_name}` without `device=`, made at module level, {met}; move it to the device once (`.to(device)`) or create it there"
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
    } else if module_level {
        "created on the CPU at module level here".to_string()
    } else {
        "plain tensor attribute created here".to_string()
    };
    // A list op (`torch.cat`, `torch.stack`) raises; arithmetic and matmuls copy the CPU tensor to
    // the device on every call (measured on torch_xla 2.9): a per-step cost, not an error.
    let raises = combination_raises(context, node);
    // A zero-dimensional CPU tensor (`torch.tensor(0.5)`) is read as a scalar: arithmetic,
    // comparisons and `masked_fill` values cost one cached transfer, not one per step (measured
    // on torch_xla 2.9); list ops, `torch.where`, `lerp` and modules still raise.
    // `torch.empty([0])`: a placeholder with no elements (an unused `in_proj_weight`).
    if has_no_elements(context, factory) {
        return;
    }
    if is_zero_dimensional(context, factory)
        && device_module.is_none()
        && !raises_even_zero_dimensional(context, node)
    {
        return;
    }
    // Created in this function: report at the factory (where the fix goes), once per factory.
    let (range, related) = if in_same_function {
        (
            factory.byte_range(),
            Related {
                range: node.byte_range(),
                message: if device_module.is_some() {
                    "passed to a module on the device here".to_string()
                } else if node.is(kind::ASSIGNMENT) {
                    "written across devices here".to_string()
                } else {
                    "meets a device tensor here".to_string()
                },
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

/// Whether the combination raises with a CPU operand (measured on torch_xla 2.9, `Expected XLA
/// tensor`): everything but elementwise `+ - * /` (operators, in-place forms, `torch.add` and
/// the `add` method …), which copy the CPU tensor to the device on every call instead.
fn combination_raises(context: &Context<'_, '_>, node: Node<'_>) -> bool {
    let source = context.source();
    match node.kind_key() {
        // An index assignment copies the value to the written tensor's device.
        kind::ASSIGNMENT => false,
        kind::BINARY_OPERATOR => node
            .child_by_field_name("operator")
            .is_some_and(|operator| syntax::text_is(operator, source, "@")),
        kind::AUGMENTED_ASSIGNMENT => node
            .child_by_field_name("operator")
            .is_some_and(|operator| syntax::text_is(operator, source, "@=")),
        kind::COMPARISON_OPERATOR => true,
        _ => {
            let name = match context.semantic().call_qualified_name(node) {
                Some(qualified) if COMBINING_FUNCTIONS.contains(&qualified.as_str()) => {
                    qualified.trim_start_matches("torch.").to_string()
                }
                // Functional ops differ (measured): `cross_entropy`'s `weight` and
                // `scaled_dot_product_attention`'s `attn_mask` are copied every call, `linear`,
                // `embedding` and `mse_loss` raise; a warning names the lower bound.
                Some(qualified) if qualified.starts_with("torch.nn.functional.") => return false,
                _ => match syntax::method_call(node) {
                    Some((_, method))
                        if torch_api::DEVICE_MATCHING_METHODS
                            .contains(&node_text(method, source)) =>
                    {
                        node_text(method, source).to_string()
                    }
                    // A call of a module on the device (`self.pos_emb(positions)`).
                    _ => return true,
                },
            };
            !COPYING_COMBINATIONS.contains(&name.as_str())
        }
    }
}

/// `torch.cat` / `torch.stack`, `torch.where` and `lerp` raise even with a zero-dimensional CPU
/// operand (measured on torch_xla 2.9), as does a module on the device given one.
fn raises_even_zero_dimensional(context: &Context<'_, '_>, node: Node<'_>) -> bool {
    node.is(kind::CALL)
        && (context
            .semantic()
            .call_qualified_name(node)
            .is_some_and(|q| {
                RAISING_COMBINATIONS.contains(&q.as_str())
                    || matches!(q.as_str(), "torch.where" | "torch.lerp")
            })
            || syntax::method_call(node).is_some_and(|(_, method)| {
                matches!(node_text(method, context.source()), "where" | "lerp")
            }))
}

/// `torch.tensor(0.5)`, `torch.tensor(torch.finfo(x.dtype).min)`, `torch.scalar_tensor(v)`: a
/// factory whose data is one Python number.
fn is_zero_dimensional(context: &Context<'_, '_>, factory: Node<'_>) -> bool {
    let Some(qualified) = context.semantic().call_qualified_name(factory) else {
        return false;
    };
    if qualified == "torch.scalar_tensor" {
        return true;
    }
    if qualified != "torch.tensor" && qualified != "torch.as_tensor" {
        return false;
    }
    let Some((_, arguments)) = context.call_parts(factory) else {
        return false;
    };
    let Some(data) = syntax::positional_args(arguments).first().copied() else {
        return false;
    };
    match syntax::unparenthesize(data).kind_key() {
        kind::INTEGER | kind::FLOAT | kind::TRUE | kind::FALSE | kind::UNARY_OPERATOR => true,
        // `torch.finfo(x.dtype).min`, `math.pi`.
        kind::ATTRIBUTE
            if data.field("attribute").is_some_and(|name| {
                matches!(
                    node_text(name, context.source()),
                    "min" | "max" | "eps" | "tiny" | "pi" | "e" | "inf" | "nan"
                )
            }) =>
        {
            true
        }
        kind::LIST | kind::TUPLE | kind::LIST_COMPREHENSION | kind::GENERATOR_EXPRESSION => false,
        _ => context.fact(data).kind == ValueKind::Scalar,
    }
}

/// `torch.empty(0)`, `torch.zeros([0])`: a factory whose only size is a literal zero.
fn has_no_elements(context: &Context<'_, '_>, factory: Node<'_>) -> bool {
    let Some((_, arguments)) = context.call_parts(factory) else {
        return false;
    };
    let positional = syntax::positional_args(arguments);
    let [size] = positional.as_slice() else {
        return false;
    };
    let size = syntax::unparenthesize(*size);
    let zero = |node: Node<'_>| node_text(node, context.source()) == "0";
    match size.kind_key() {
        kind::INTEGER => zero(size),
        kind::LIST | kind::TUPLE => {
            let mut items = size.named_nodes();
            matches!((items.next(), items.next()), (Some(only), None) if zero(only))
        }
        _ => false,
    }
}

/// Elementwise arithmetic, which copies a CPU operand to the device on every call.
const COPYING_COMBINATIONS: WordList = word_list!["add", "sub", "mul", "div"];

/// Whether the module was built here by a `torch.nn` class without parameters (`nn.Dropout`,
/// `nn.CTCLoss`): nothing of it is on the device, so the CPU tensor passes through it.
fn builds_parameterless_module(context: &Context<'_, '_>, module: &Fact) -> bool {
    let semantic = context.semantic();
    module
        .origin
        .and_then(|origin| semantic.origin_node(origin))
        .filter(|node| node.is(kind::CALL))
        .and_then(|call| semantic.call_qualified_name(call))
        .and_then(|qualified| qualified.strip_prefix("torch.nn.").map(str::to_string))
        .is_some_and(|name| torch_api::is_parameterless_module(&name))
}

/// `criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0]))`, never moved, then
/// `criterion(logits, y)` on device tensors: a `torch.nn` module keeps the CPU tensor it was
/// built with as a buffer, and applies it to the device inputs on every call, like the functional
/// op's keyword argument (copied every call, measured for `F.cross_entropy(weight=)`). Reported
/// at the factory, as a warning.
fn report_host_module_tensor<'t>(
    context: &mut Context<'t, '_>,
    call: Node<'t>,
    function: Node<'t>,
    module: &Fact,
    positional: &[Node<'t>],
) {
    let on_device = positional.iter().any(|argument| {
        let fact = context.fact(*argument);
        fact.is_tensor() && fact.device == Device::Accelerator
    });
    if !on_device {
        return;
    }
    let semantic = context.semantic();
    let Some(constructor) = module
        .origin
        .and_then(|origin| semantic.origin_node(origin))
        .filter(|node| node.is(kind::CALL))
    else {
        return;
    };
    if !semantic
        .call_qualified_name(constructor)
        .is_some_and(|qualified| qualified.starts_with("torch.nn."))
    {
        return;
    }
    let Some((_, arguments)) = context.call_parts(constructor) else {
        return;
    };
    let values =
        syntax::with_keyword_values(syntax::positional_args(arguments), arguments).into_iter();
    let Some((factory, factory_name)) = values
        .filter_map(|value| {
            let fact = context.fact(value);
            (fact.is_tensor() && fact.device == Device::Cpu)
                .then(|| {
                    cpu_factories_at(context, fact.origin_range()?, call)
                        .0
                        .into_iter()
                        .next()
                })
                .flatten()
        })
        .map(|factory| {
            let name = context
                .semantic()
                .call_qualified_name(factory)
                .unwrap_or_default();
            (factory, name)
        })
        .next()
    else {
        return;
    };
    if has_no_elements(context, factory) {
        return;
    }
    let module_text = crate::rules::helpers::short_code(context.text(function));
    let message = format!(
        "CPU tensor from `{factory_name}` without `device=` is held by module `{module_text}`, which is applied to device tensors and never moved"
    );
    let diagnostic = context.report(factory.byte_range(), message);
    diagnostic.related.push(Related {
        range: call.byte_range(),
        message: "applied to device tensors here".to_string(),
    });
    diagnostic.severity = crate::diagnostic::Severity::Warning;
}

/// Combinations that raise with a CPU operand instead of copying it.
const RAISING_COMBINATIONS: WordList = word_list![
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
    match operand.kind_key() {
        kind::BINARY_OPERATOR => syntax::sides(operand).find_map(|side| {
            let fact = context.fact(side);
            (fact.is_tensor() && fact.device == Device::Cpu)
                .then(|| cpu_source(context, side, depth + 1))
                .flatten()
        }),
        // `mask == 0`, `~keep`: an elementwise comparison or negation of the CPU tensor.
        kind::COMPARISON_OPERATOR => operand.named_nodes().find_map(|side| {
            let fact = context.fact(side);
            (fact.is_tensor() && fact.device == Device::Cpu)
                .then(|| cpu_source(context, side, depth + 1))
                .flatten()
        }),
        kind::UNARY_OPERATOR | kind::NOT_OPERATOR => operand
            .field("argument")
            .and_then(|inner| cpu_source(context, inner, depth + 1)),
        kind::SUBSCRIPT => operand
            .field("value")
            .and_then(|value| cpu_source(context, value, depth + 1)),
        _ => {
            let fact = context.fact(operand);
            (fact.is_tensor() && fact.device == Device::Cpu).then_some(fact)
        }
    }
}

/// The torch factory calls (without `device=`, not zero-dimensional) the CPU value at `origin`
/// was computed from, and the function that contains them, as the index recorded them when the
/// value was bound (the factory may lie outside the current node's ancestors: an `__init__`
/// attribute). Usually one; `torch.stack([xx, yy])` of two host grids has two.
fn cpu_factories_at<'t>(
    context: &Context<'t, '_>,
    origin: TextRange,
    at: Node<'t>,
) -> (Vec<Node<'t>>, Option<Node<'t>>) {
    let semantic = context.semantic();
    let function = semantic.origin_function((origin.start, origin.end));
    let Some(start) = semantic.origin_node((origin.start, origin.end)) else {
        return (Vec::new(), function);
    };
    // Names inside the recorded value are read with the current bindings: only where the value
    // was recorded in the function being checked (not an `__init__` attribute) do they mean the
    // same values.
    let current_function = context
        .enclosing(at, &["function_definition"])
        .map(|f| f.byte_range());
    let same_function = current_function == function.map(|f| f.byte_range());
    let mut factories: Vec<Node<'t>> = Vec::new();
    // The value the index recorded may be computed from the factory's result and still be on
    // the CPU (the fact says so); the factory is where `device=` goes. Walk back to it through
    // - arithmetic with Python numbers: `labels = torch.arange(n) + rank * n` (arithmetic with a
    //   device tensor has no CPU fact, so it never arrives here);
    // - methods: `torch.ones(n, n).tril()`, `shifts.reshape(-1, 4)`;
    // - torch ops whose result is where their tensor arguments are: `torch.stack([xx, yy])`
    //   (every host argument: each factory needs its `device=`), `yy, xx = torch.meshgrid(sy,
    //   sx)` (as the index places each output).
    // The bound keeps a pathological chain from costing more than a few steps per operand.
    let mut pending = vec![(start, 0usize)];
    while let Some((mut node, mut steps)) = pending.pop() {
        let found = loop {
            if steps >= 12 || factories.len() >= 4 {
                break None;
            }
            steps += 1;
            node = syntax::unparenthesize(node);
            if node.is(kind::BINARY_OPERATOR) {
                if !same_function {
                    break None;
                }
                let Some(inner) = cpu_source(context, node, 0).and_then(|fact| fact.origin) else {
                    break None;
                };
                // `self.alpha * 2` with `self.alpha` built in `__init__`: reported as an
                // attribute where it meets the device tensor, not here.
                if semantic.origin_function(inner).map(|f| f.byte_range()) != current_function {
                    break None;
                }
                match semantic.origin_node(inner) {
                    Some(inner) => node = inner,
                    None => break None,
                }
                continue;
            }
            if node.is_not(kind::CALL) {
                break None;
            }
            // A torch function: a factory (found), or an op that follows its tensor arguments.
            if let Some(function_name) = semantic
                .call_qualified_name(node)
                .and_then(|q| q.strip_prefix("torch.").map(str::to_string))
            {
                if torch_api::TENSOR_FACTORIES.contains(&function_name.as_str())
                    || !torch_api::in_tensor_namespace(&function_name)
                    || !same_function
                {
                    break Some(node);
                }
                let Some((_, arguments)) = context.call_parts(node) else {
                    break None;
                };
                let host_arguments: Vec<Node<'t>> =
                    syntax::spread_sequences(syntax::positional_args(arguments))
                        .into_iter()
                        .filter_map(|argument| {
                            cpu_tensor_origin(context, argument, &current_function)
                        })
                        .collect();
                let Some((first, rest)) = host_arguments.split_first() else {
                    break None;
                };
                pending.extend(rest.iter().map(|argument| (*argument, steps)));
                node = *first;
                continue;
            }
            // A method of a tensor: `torch.ones(n, n).tril()`, `shifts.reshape(-1, 4)`.
            let Some((receiver, method)) = syntax::method_call(node) else {
                break Some(node);
            };
            let receiver = syntax::unparenthesize(receiver);
            if matches!(
                node_text(method, context.source()),
                "to" | "cuda" | "cpu" | "type_as"
            ) {
                break Some(node);
            }
            // `(near * (1.0 - t) + far * t).expand(n, k)`: the method of host arithmetic, walked
            // back through the arithmetic at the top of the loop.
            if receiver.is_any(&[kind::CALL, kind::BINARY_OPERATOR]) {
                node = receiver;
                continue;
            }
            if !same_function {
                break Some(node);
            }
            match cpu_tensor_origin(context, receiver, &current_function) {
                // `timesteps = timesteps.long()`: the name's fact is this rebinding itself; the
                // receiver is the value bound before it (`torch.randint(0, T, (bsz,))`).
                Some(origin) if origin.id() == node.id() && receiver.is(kind::IDENTIFIER) => {
                    match crate::rules::tensor_values::last_assignment_value(
                        context,
                        context.text(receiver),
                        receiver,
                    ) {
                        Some(bound) => node = bound,
                        None => break None,
                    }
                }
                Some(origin) => node = origin,
                None => break None,
            }
        };
        let Some(node) = found else { continue };
        if is_host_factory(context, node) && !factories.iter().any(|f| f.id() == node.id()) {
            factories.push(node);
        }
    }
    (factories, function)
}

/// A torch factory without `device=` that allocates on the default device (not
/// `torch.from_numpy`, which shares NumPy's memory).
fn is_host_factory(context: &Context<'_, '_>, node: Node<'_>) -> bool {
    let Some(qualified) = context.semantic().call_qualified_name(node) else {
        return false;
    };
    let Some(factory) = qualified.strip_prefix("torch.") else {
        return false;
    };
    if !torch_api::TENSOR_FACTORIES.contains(&factory) || factory == "from_numpy" {
        return false;
    }
    context.call_parts(node).is_some_and(|(_, arguments)| {
        context.keyword_arg(arguments, "device").is_none() && !syntax::has_splat(arguments)
    })
}

/// Where the CPU tensor `expr` was recorded: the expression itself for a call, else its fact's
/// origin when that lies in `function` too (a plain attribute built in `__init__` is reported
/// where it meets the device tensor, as an attribute, and its zero-dimensional constants are
/// left alone there); `None` when it is not a CPU tensor.
fn cpu_tensor_origin<'t>(
    context: &Context<'t, '_>,
    expr: Node<'t>,
    function: &Option<std::ops::Range<usize>>,
) -> Option<Node<'t>> {
    let expr = syntax::unparenthesize(expr);
    let fact = context.fact(expr);
    if !fact.is_tensor() || fact.device != Device::Cpu {
        return None;
    }
    if expr.is(kind::CALL) {
        return Some(expr);
    }
    let (start, end) = fact.origin?;
    let semantic = context.semantic();
    if semantic
        .origin_function((start, end))
        .map(|f| f.byte_range())
        != *function
    {
        return None;
    }
    let origin = semantic.origin_node((start, end))?;
    // A name whose fact points back at itself would loop.
    (origin.id() != expr.id()).then_some(origin)
}

/// Whether `operand` is itself a binary operation that combines the same CPU tensor (reported there).
fn operand_is_combination_with_cpu<'t>(context: &Context<'t, '_>, operand: Node<'t>) -> bool {
    let operand = syntax::unparenthesize(operand);
    if operand.is_not(kind::BINARY_OPERATOR) {
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
