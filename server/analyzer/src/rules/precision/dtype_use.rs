//! Where a call asks for a given floating dtype (shared by TPU501 and TPU503): a `dtype=` /
//! `torch_dtype=` keyword, `.to(<dtype>)` / `.type(<dtype>)`, `torch.set_default_dtype(<dtype>)`,
//! or the shorthand method (`.double()`, `.half()`).

use tree_sitter::Node;

use crate::checker::Context;
use crate::diagnostic::Edit;
use crate::rules::helpers;
use crate::semantic::{Device, ValueKind};
use crate::source::TextRange;
use crate::syntax::NodeExt;
use crate::syntax::{self, node_text};

/// How the dtype is requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DtypeUseKind {
    /// `dtype=torch.float64` in a torch factory without `device=` (the tensor is on the host).
    HostFactoryKeyword,
    /// `dtype=` / `torch_dtype=` anywhere else.
    Keyword,
    /// `.to(torch.float64)` / `.type(torch.float64)` of a tensor.
    Conversion,
    /// `.double()` / `.half()` of a tensor.
    ShorthandOnTensor,
    /// `.to(...)`, `.double()`, `.half()` of an `nn.Module`: every parameter changes.
    Module,
    /// `torch.set_default_dtype(...)`: every later float tensor.
    DefaultDtype,
}

/// One request for the dtype, with the node to report and the edit to the replacement dtype.
#[derive(Debug, Clone)]
pub struct DtypeUse {
    pub kind: DtypeUseKind,
    pub range: TextRange,
    pub replacement: Edit,
}

/// Finds where `call` requests `dtype` (canonical name, e.g. `"float64"`); `shorthand` is the
/// method spelling (`"double"`), `replacement_dtype` / `replacement_method` the fix.
pub fn dtype_use(
    context: &Context<'_, '_>,
    call: Node<'_>,
    dtype: &str,
    shorthand: &str,
    replacement_dtype: &str,
    replacement_method: &str,
) -> Option<DtypeUse> {
    let source = context.source();
    let (function, arguments) = context.call_parts(call)?;
    // Inside an override of the conversion itself (`def double(self): … super().double()`, a
    // mixin's `def half(self)`), the dtype is the caller's request passed along, not a choice.
    if context
        .semantic()
        .function()
        .is_some_and(|f| f.name == shorthand)
    {
        return None;
    }
    let replace_dtype = |node: Node<'_>| {
        // Keep the spelling of the prefix (`torch.`, `th.`): replace only the attribute.
        let node = syntax::unparenthesize(node);
        match node.field("attribute") {
            Some(attribute) => Edit::replace(attribute.byte_range(), replacement_dtype),
            None => Edit::replace(node.byte_range(), format!("torch.{replacement_dtype}")),
        }
    };
    let is_dtype = |node: Node<'_>| helpers::torch_dtype(context, node) == Some(dtype);

    // Keyword requests: `dtype=` / `torch_dtype=` in any call.
    for name in ["dtype", "torch_dtype"] {
        if let Some(value) = context.keyword_arg(arguments, name)
            && is_dtype(value)
        {
            let qualified = context.qualified_name(function);
            let host_factory = qualified
                .as_deref()
                .and_then(|q| q.strip_prefix("torch."))
                .is_some_and(|f| crate::torch_api::TENSOR_FACTORIES.contains(&f))
                && context
                    .keyword_arg(arguments, "device")
                    .is_none_or(|d| context.semantic().device_of_expr(d, 0) == Device::Cpu);
            if qualified.is_none()
                && on_host_tensor(context, call)
                && !moved_off_host(context, call, arguments)
            {
                return None;
            }
            let keyword = context.keyword_arg_node(arguments, name)?;
            return Some(DtypeUse {
                kind: if host_factory {
                    DtypeUseKind::HostFactoryKeyword
                } else {
                    DtypeUseKind::Keyword
                },
                range: keyword.byte_range(),
                replacement: replace_dtype(value),
            });
        }
    }

    if let Some(qualified) = context.qualified_name(function) {
        if matches!(qualified.as_str(), "torch.set_default_dtype")
            && let Some(value) = syntax::positional_args(arguments).first()
            && is_dtype(*value)
        {
            return Some(DtypeUse {
                kind: DtypeUseKind::DefaultDtype,
                range: call.byte_range(),
                replacement: replace_dtype(*value),
            });
        }
        return None;
    }

    let (receiver, method) = context.method_call(call)?;
    let method_name = node_text(method, source);
    // The conversion first (`.double()`, `.to(torch.float64)`), then what the receiver is: its
    // fact costs more than the method's name, and most method calls convert nothing.
    let replacement = if method_name == shorthand && arguments.named_child_count() == 0 {
        Edit::replace(method.byte_range(), replacement_method)
    } else if matches!(method_name, "to" | "type")
        && let Some(value) = syntax::positional_args(arguments)
            .into_iter()
            .find(|argument| is_dtype(*argument))
    {
        replace_dtype(value)
    } else {
        return None;
    };
    let receiver_fact = context.fact(receiver);
    let is_module = receiver_fact.kind == ValueKind::Module;
    if !is_module && !helpers::is_probably_tensor(context, receiver) {
        return None;
    }
    // A host tensor stays on the host unless the same `.to(...)` also moves it: `.to(device,
    // torch.float16)` (or `device=`) converts it on the way to a device other than the CPU.
    if !is_module
        && receiver_fact.device == Device::Cpu
        && !moved_off_host(context, call, arguments)
    {
        return None;
    }
    let kind = if is_module {
        DtypeUseKind::Module
    } else if method_name == shorthand {
        DtypeUseKind::ShorthandOnTensor
    } else {
        DtypeUseKind::Conversion
    };
    Some(DtypeUse {
        kind,
        range: method.start_byte()..call.end_byte(),
        replacement,
    })
}

/// Whether the arguments of a `.to(...)` name a device other than the CPU besides the dtype:
/// the first positional argument when there are two (`.to(device, torch.float16)`), or
/// `device=`.
fn moved_off_host<'t>(context: &Context<'t, '_>, call: Node<'t>, arguments: Node<'t>) -> bool {
    if !context
        .method_call(call)
        .is_some_and(|(_, method)| context.text_is(method, "to"))
    {
        return false;
    }
    let positional = syntax::positional_args(arguments);
    let device = match context.keyword_arg(arguments, "device") {
        Some(device) => Some(device),
        None if positional.len() >= 2 => positional.first().copied(),
        None => None,
    };
    device.is_some_and(|device| context.semantic().device_of_expr(device, 0) != Device::Cpu)
}

/// `x.cpu().sum(dtype=...)`: a method of a tensor known to be on the host.
fn on_host_tensor<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    context.method_call(call).is_some_and(|(receiver, _)| {
        let fact = context.fact(receiver);
        fact.is_tensor() && fact.device == Device::Cpu
    })
}
