//! TPU408: `torch.save` of XLA device tensors in PyTorch/XLA code.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::{helpers, tensor_values};
use crate::semantic::{Backend, Device, Evidence, ValueKind};
use crate::syntax;
use crate::syntax::NodeExt;
use crate::torch_api;

declare_rule! {
    /// ## What it does
    /// In PyTorch/XLA code, checks for `torch.save(...)` of values the index places on the XLA
    /// device: the state dict of a model moved there (`model = Net().to(device)`,
    /// `torch.save(model.state_dict(), path)`), a device tensor, or a dictionary holding one of
    /// them (`{"model": model.state_dict(), "epoch": epoch}`), also a filtered copy of a state
    /// dict (`{k: v for k, v in model.state_dict().items() if "lora_" in k}`) or PEFT's
    /// `get_peft_model_state_dict(model)` of a device model.
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA's troubleshooting guide: "XLA tensors should be moved to the CPU before
    /// saving them. Saving XLA tensors directly causes them to be loaded back on the device(s)
    /// they were saved from. If a device is unavailable at load time then the load will fail."
    /// A checkpoint written this way cannot be loaded on a machine without an XLA device (an
    /// evaluation host, a GPU box) unless every reader passes `map_location`. `xm.save` moves
    /// the tensors to the CPU first (and writes from the master process only).
    ///
    /// ## Example
    /// ```python
    /// model = Net().to(torch_xla.device())
    /// torch.save(model.state_dict(), "model.pt")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// xm.save(model.state_dict(), "model.pt")  # CPU copies; only the master writes
    /// # or, on one process: torch.save({k: v.cpu() for k, v in model.state_dict().items()}, path)
    /// ```
    ///
    /// ## Fix safety
    /// No fix: `xm.save` writes from the master process only (`master_only=True`), which is
    /// what a multi-process job wants but not the same behaviour as `torch.save` on every
    /// process, and moving the tensors to the CPU loses view relationships.
    ///
    /// ## Known problems
    /// Only files whose backend is PyTorch/XLA are checked. The model must be visibly moved to
    /// the device where it is bound (`model = Net().to(device)`, any callee, or a wrapper of such a
    /// value: `FSDP(net.to(device))`), be moved in place after that binding in the same function
    /// (`model.to(device)` on its own line), or be known to the index as a module on the device;
    /// an optimizer's state dict is not recognised.
    ///
    /// ## References
    /// - PyTorch/XLA, *Troubleshooting — Known quirks*, 2
    ///   (https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    /// - PyTorch/XLA, *PyTorch on XLA Devices — Saving and Loading XLA Tensors*
    ///   (https://github.com/pytorch/xla/blob/master/docs/source/learn/pytorch-on-xla-devices.md)
    /// - https://github.com/pytorch/xla/issues/2364 (`torch.save` of an XLA model's state dict)
    pub(crate) static TORCH_SAVE_DEVICE_TENSORS = {
        code: "TPU408",
        name: "torch-save-device-tensors",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["save"],
        calls: ["torch.save"],
        check: check,
    }
}

/// TPU408
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if context.backend() != Backend::TorchXla {
        return;
    }
    if helpers::call_matches(context, call, &["torch.save"]).is_none() {
        return;
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    let Some(saved) = syntax::positional_args(arguments).first().copied() else {
        return;
    };
    if helpers::holds_host_values(context, saved) {
        return;
    }
    let Some(what) = device_state(context, saved, 0) else {
        return;
    };
    let message = format!(
        "`torch.save` of {what}: the checkpoint loads back only where an XLA device exists; save CPU copies (`xm.save`)"
    );
    context.report(function.start_byte()..call.end_byte(), message);
}

/// What in `value` lives on the XLA device: a device model's state dict, a device tensor, or a
/// dictionary or name holding one.
fn device_state<'t>(
    context: &Context<'t, '_>,
    value: Node<'t>,
    depth: usize,
) -> Option<&'static str> {
    if depth > 4 {
        return None;
    }
    let value = syntax::unparenthesize(value);
    match value.kind_key() {
        kind::CALL => {
            // `get_peft_model_state_dict(unet)`: the state dict of the module it is given.
            if let Some((function, arguments)) = context.call_parts(value)
                && let Some(qualified) = context.qualified_name(function)
                && torch_api::MODULE_STATE_DICT_FUNCTIONS
                    .iter()
                    .any(|(package, last)| {
                        qualified.starts_with(package)
                            && qualified.rsplit('.').next() == Some(*last)
                    })
            {
                let module = *syntax::positional_args(arguments).first()?;
                let fact = context.fact(module);
                let on_device = (fact.kind == ValueKind::Module
                    && fact.device == Device::Accelerator)
                    || bound_by_move_to_device(context, module);
                return on_device.then_some("a device model's state dict");
            }
            let (receiver, method) = context.method_call(value)?;
            if !context.text_is(method, "state_dict") {
                return None;
            }
            let module = context.fact(receiver);
            let on_device = (module.kind == ValueKind::Module
                && module.device == Device::Accelerator)
                || bound_by_move_to_device(context, receiver);
            on_device.then_some("a device model's state dict")
        }
        kind::DICTIONARY => value.named_nodes().find_map(|pair| {
            pair.field("value")
                .and_then(|element| device_state(context, element, depth + 1))
        }),
        // `{k: v for k, v in model.state_dict().items() if "lora_" in k}`: a filtered copy of a
        // state dict holds the same tensors, where they are (`v.cpu()` values are not `v`).
        kind::DICTIONARY_COMPREHENSION => {
            let element = value.field("body")?.field("value")?;
            let clause = value.named_nodes().find(|n| n.is(kind::FOR_IN_CLAUSE))?;
            let (container, method) = context.method_call(clause.field("right")?)?;
            let target = clause.field("left")?;
            let value_target = match context.text(method) {
                "items" if target.is_any(&[kind::PATTERN_LIST, kind::TUPLE_PATTERN]) => {
                    target.named_nodes().nth(1)?
                }
                "values" => target,
                _ => return None,
            };
            (element.is(kind::IDENTIFIER)
                && value_target.is(kind::IDENTIFIER)
                && context.text(element) == context.text(value_target))
            .then(|| device_state(context, container, depth + 1))
            .flatten()
        }
        kind::IDENTIFIER => {
            let fact = context.fact(value);
            // A guessed parameter of a hot function is too weak: nothing shows where it lives.
            if fact.is_tensor()
                && fact.device == Device::Accelerator
                && fact.evidence != Evidence::GuessedParameter
            {
                return Some("an XLA tensor");
            }
            let bound = tensor_values::last_assignment_value(context, context.text(value), value)?;
            (bound.start_byte() != value.start_byte())
                .then(|| device_state(context, bound, depth + 1))
                .flatten()
        }
        _ => None,
    }
}

/// `model = build_model(cfg).to(device)`, `model = FSDP(net.to(device))`: a name last bound to
/// a `.to(...)` whose argument the index places on the accelerator, or to a wrapper called with
/// one. Its class need not be known: `.state_dict()` is asked of it.
fn bound_by_move_to_device<'t>(context: &Context<'t, '_>, receiver: Node<'t>) -> bool {
    if receiver.is_not(kind::IDENTIFIER) {
        return false;
    }
    let name = context.text(receiver);
    let Some(bound) = tensor_values::last_assignment_value(context, name, receiver) else {
        return false;
    };
    if moved_to_device(context, bound, 0) {
        return true;
    }
    // `model = Whisper.from_pretrained(name)` then `model.to(device)` on its own line:
    // `nn.Module.to` moves the module in place, so the name holds the moved model from there on.
    let semantic = context.semantic();
    semantic.function_around(receiver).is_some_and(|function| {
        semantic.module_moved_between(function, name, bound.end_byte(), receiver.start_byte())
    })
}

fn moved_to_device<'t>(context: &Context<'t, '_>, value: Node<'t>, depth: usize) -> bool {
    if depth > 2 || value.is_not(kind::CALL) {
        return false;
    }
    let Some((_, arguments)) = context.call_parts(value) else {
        return false;
    };
    let is_to = context
        .method_call(value)
        .is_some_and(|(_, method)| context.text_is(method, "to"));
    if !is_to {
        // A wrapper: `FSDP(model.to(device))`, `torch.compile(net.to(device))`.
        return syntax::positional_args(arguments)
            .first()
            .is_some_and(|first| moved_to_device(context, *first, depth + 1));
    }
    context
        .keyword_arg(arguments, "device")
        .or_else(|| syntax::positional_args(arguments).first().copied())
        .is_some_and(|device| {
            // `.to(torch.bfloat16)` converts the dtype and keeps the device.
            let dtype = context
                .qualified_name(device)
                .as_deref()
                .and_then(|name| name.strip_prefix("torch."))
                .and_then(torch_api::canonical_dtype)
                .is_some();
            !dtype && context.semantic().device_of_expr(device, 0) == Device::Accelerator
        })
}
