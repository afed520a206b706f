//! TPU704: `xr.use_spmd()` called after tensors or modules were put on the XLA device.

use crate::kind;
use crate::word_list::{WordList, word_list};
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Related;
use crate::rules::helpers;
use crate::syntax::{self, NodeExt};

declare_rule! {
    /// ## What it does
    /// Checks for `torch_xla.runtime.use_spmd()` preceded, in the same block (or, for a call at
    /// module level, earlier at module level), by a statement that uses the XLA device:
    /// `torch_xla.device()`, `xm.xla_device()`, or `.to(...)` of a device string `"xla"`.
    ///
    /// ## Why is this bad?
    /// SPMD mode must be set before the runtime picks its device. Taking the device handle is
    /// enough: it fixes the default device and locks the SPMD configuration (`GetDefaultDevice`
    /// calls `UseVirtualDevice`, which sets the lock). Called later, `use_spmd()` forces the
    /// virtual device, waits for the device, moves every tensor already placed on the
    /// non-virtual device and warns "Replicating tensors already initialized on non-virtual XLA
    /// device for SPMD … please set SPMD mode before initializting tensors (i.e., call
    /// use_spmd() in the beginning of the program)": extra transfers and memory, and sharding
    /// annotations that start from replicated copies.
    ///
    /// ## Example
    /// ```python
    /// device = torch_xla.device()
    /// model = Net().to(device)
    /// xr.use_spmd()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// xr.use_spmd()
    /// device = torch_xla.device()
    /// model = Net().to(device)
    /// ```
    ///
    /// ## Fix safety
    /// No fix: moving the call may move other side effects of the statements around it.
    ///
    /// ## Known problems
    /// Device work in other functions (a helper that builds the model) is not seen.
    ///
    /// ## References
    /// - https://github.com/pytorch/xla/blob/v2.9.0/torch_xla/runtime.py (`use_spmd`, the
    ///   replication warning when `_xla_get_spmd_config_is_locked()`)
    /// - https://github.com/pytorch/xla/blob/2cacf596651875193dc08cf525e84fe85999fc30/torch_xla/csrc/aten_xla_bridge.cpp
    ///   (`GetDefaultDevice`, reached from `torch_xla.device()` through
    ///   `_xla_get_default_device` and `GetCurrentAtenDevice`, calls `UseVirtualDevice`, which
    ///   locks the configuration)
    /// - https://github.com/pytorch/xla/blob/master/docs/source/perf/spmd_basic.md
    pub(crate) static SPMD_ENABLED_AFTER_DEVICE_USE = {
        code: "TPU704",
        name: "spmd-enabled-after-device-use",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["use_spmd"],
        calls: ["torch_xla.runtime.use_spmd"],
        check: check,
    }
}

const DEVICE_CALLS: WordList = word_list![
    "torch_xla.device",
    "torch_xla.core.xla_model.xla_device",
    "torch_xla.runtime.xla_device",
];

/// TPU704
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if helpers::call_matches(context, call, &["torch_xla.runtime.use_spmd"]).is_none() {
        return;
    }
    // The statement holding the call, and the block holding the statement.
    let mut statement = call;
    let mut block = context.parent(call);
    while let Some(parent) = block {
        if parent.is_any(&[kind::BLOCK, kind::MODULE]) {
            break;
        }
        statement = parent;
        block = context.parent(parent);
    }
    let Some(block) = block else {
        return;
    };
    // A device handle alone (`device = torch_xla.device()`) counts: it locks the SPMD
    // configuration whether or not anything is placed there yet.
    let Some(device_use) = block
        .named_nodes()
        .take_while(|sibling| sibling.id() != statement.id())
        .find_map(|sibling| first_device_use(context, sibling))
    else {
        return;
    };
    let related = Related {
        range: device_use.byte_range(),
        message: "the XLA device is used here first".to_string(),
    };
    let diagnostic = context.report(
        call.byte_range(),
        "`use_spmd()` after the XLA device was taken: SPMD is forced on a runtime set up without it, replicating any tensors already there; call it first",
    );
    diagnostic.related.push(related);
}

/// The first call in `statement` (not inside a nested function or class) that uses the XLA
/// device (and so has started torch_xla's runtime).
pub(crate) fn first_device_use<'t>(
    context: &Context<'t, '_>,
    statement: Node<'t>,
) -> Option<Node<'t>> {
    if statement.is_any(&[
        kind::FUNCTION_DEFINITION,
        kind::CLASS_DEFINITION,
        kind::DECORATED_DEFINITION,
    ]) {
        return None;
    }
    let source = context.source();
    let mut stack = vec![statement];
    while let Some(node) = stack.pop() {
        if node.is(kind::CALL) {
            if let Some(name) = context.semantic().call_qualified_name(node)
                && DEVICE_CALLS.contains(&name.as_str())
            {
                return Some(node);
            }
            if let Some((_, method)) = context.method_call(node)
                && context.text_is(method, "to")
                && let Some((_, arguments)) = context.call_parts(node)
                && syntax::argument(arguments, 0, "device", source)
                    .and_then(|device| syntax::string_value(device, source))
                    .is_some_and(|device| device == "xla" || device.starts_with("xla:"))
            {
                return Some(node);
            }
        }
        if node.is_any(&[
            kind::FUNCTION_DEFINITION,
            kind::CLASS_DEFINITION,
            kind::LAMBDA,
        ]) {
            continue;
        }
        let children: Vec<Node<'t>> = node.named_nodes().collect();
        stack.extend(children.into_iter().rev());
    }
    None
}
