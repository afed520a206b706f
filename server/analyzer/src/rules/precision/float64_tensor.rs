//! TPU501: float64 tensors, modules and defaults.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Fix, Severity};
use crate::kind;
use crate::rules::precision::dtype_use::{DtypeUseKind, dtype_use};
use crate::semantic::{Backend, Device};
use crate::syntax::{NodeExt, node_text};
use crate::torch_api;

declare_rule! {
    /// ## What it does
    /// Checks for float64 requested on device tensors and models: `dtype=torch.float64` /
    /// `torch.double`, `.to(torch.float64)`, `.double()`, `model.double()`, and
    /// `torch.set_default_dtype(torch.float64)`.
    ///
    /// ## Why is this bad?
    /// TPUs have no native float64. PyTorch/XLA keeps F64 in the graph, where it is emulated at
    /// a fraction of float32 speed, or rejected: users hit `UNIMPLEMENTED: While rewriting
    /// computation to not contain X64 element types`, and float64 values mixed into bf16/f32
    /// graphs fail with "Seen floating point types of different precisions ... mixed precision
    /// is disallowed". The maintainers' advice is to stay in float32 or bfloat16 ("TPU does not
    /// support float64").
    ///
    /// ## Example
    /// ```python
    /// model = Net().double().to(device)
    /// grid = torch.linspace(0, 1, steps, dtype=torch.float64, device=device)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = Net().to(device)  # float32
    /// grid = torch.linspace(0, 1, steps, dtype=torch.float32, device=device)
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces `float64` / `double` with `float32` / `float`. It is unsafe: results
    /// lose precision, which matters for accumulations that were made float64 on purpose. It
    /// is not offered where the code visibly relies on the dtype: the same statement casts the
    /// result back (`x.double().sum().float()`), or an `assert` in the block checks the
    /// `.dtype`.
    ///
    /// ## Known problems
    /// Float64 computations on the host are legitimate (schedulers, metrics, NumPy interop):
    /// a factory without `device=` (or with `device="cpu"`) is reported only on hot paths,
    /// where its result usually meets device tensors, and methods of tensors known to be on the
    /// CPU (`x.cpu().double()`) are not reported; nor, off hot paths, a conversion whose result
    /// is copied to the host at once (`points.double().cpu().numpy()` for a library that wants
    /// float64 arrays: an export, a plot), or bound in a function to a name whose later reads
    /// are all host copies (`refs = refs.double()`, then only `metric(refs.cpu())`, up to the
    /// name's next binding). Receivers whose type is unknown are taken to
    /// be tensors; off hot paths, those of unknown placement in a file that names no device
    /// (no `device`, XLA or TPU: a checkpoint converter comparing CPU state dicts) are taken to
    /// be on the host and are not reported.
    ///
    /// ## References
    /// - pytorch/xla PR #1880, PR #7142, issues #2918 and #9014 (no float64 on TPU)
    /// - PyTorch/XLA `torch_xla/csrc/dtype.cpp` (F64 kept unless the deprecated env flags are set)
    pub(crate) static FLOAT64_TENSOR = {
        code: "TPU501",
        name: "float64-tensor",
        severity: Warning,
        fix: Sometimes,
        kinds: ["call"],
        check: check,
    }
}

/// Whether a tensor conversion off the hot paths converts a value of unknown placement in a file
/// that names no device at all (no `device`, XLA or TPU, no TPU backend imported, and no CUDA
/// above the call in its own top-level statement): a checkpoint converter or an analysis script
/// whose tensors stay on the host, where float64 is legitimate. A conversion below a `.cuda()` may
/// convert its result and stays reported. Only the call's own statement is read for the CUDA
/// mention: text in another statement is the index's to report (an edit above the statement
/// must not change a finding the editor reuses).
fn runs_on_the_host<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let Some((receiver, _)) = context.method_call(call) else {
        return false;
    };
    context.fact(receiver).device == Device::Unknown
        && context.backend() == Backend::Unknown
        && !context.source_mentions("device")
        && !context.source_mentions("xla")
        && !context.source_mentions("\"tpu\"")
        && !context.source_mentions("'tpu'")
        && !context.source_mentions("torch.tpu")
        && !context.source()[statement_start(context, call)..call.end_byte()].contains("cuda")
}

/// Where the top-level statement holding `node` starts.
fn statement_start<'t>(context: &Context<'t, '_>, node: Node<'t>) -> usize {
    let mut statement = node;
    while let Some(parent) = context.parent(statement) {
        if parent.is(kind::MODULE) {
            break;
        }
        statement = parent;
    }
    statement.start_byte()
}

/// Whether the converted tensor goes straight to the host: the conversion's result, through
/// value-preserving methods (`.detach()`, `.contiguous()`, a reshape), is the receiver of a host
/// copy (`.cpu()`, `.numpy()`, `.tolist()`, `.item()`). The float64 value is wanted in host
/// memory (NumPy interop, an export, a printed number); off the hot paths, converting on the
/// device first costs one conversion, not a float64 computation.
fn copied_to_the_host<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let source = context.source();
    let mut value = call;
    loop {
        let Some(attribute) = context.parent(value).filter(|p| p.is(kind::ATTRIBUTE)) else {
            return false;
        };
        if attribute.field("object").map(|o| o.id()) != Some(value.id()) {
            return false;
        }
        let Some(method_call) = context.parent(attribute).filter(|p| p.is(kind::CALL)) else {
            return false;
        };
        let method = attribute
            .field("attribute")
            .map(|a| node_text(a, source))
            .unwrap_or("");
        if torch_api::HOST_COPY_METHODS.contains(&method) {
            return true;
        }
        if !torch_api::DTYPE_PRESERVING_METHODS.contains(&method) {
            return false;
        }
        value = method_call;
    }
}

/// Whether the converted tensor is bound to a name that is only ever copied to the host
/// afterwards: `refs = refs.transpose(1, 2).double()` in a function whose later reads of `refs`
/// (up to its next binding) are each the receiver of a host copy (`refs.cpu()`, `refs.numpy()`),
/// as [`copied_to_the_host`] asks of the expression itself.
fn bound_for_the_host<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let source = context.source();
    // Up through value-preserving methods (`x.double().contiguous()`) to the bound value.
    let mut value = call;
    while let Some(attribute) = context.parent(value).filter(|p| p.is(kind::ATTRIBUTE))
        && attribute.field("object").map(|o| o.id()) == Some(value.id())
        && attribute
            .field("attribute")
            .is_some_and(|a| torch_api::DTYPE_PRESERVING_METHODS.contains(&node_text(a, source)))
        && let Some(method_call) = context.parent(attribute).filter(|p| p.is(kind::CALL))
    {
        value = method_call;
    }
    let Some(assignment) = context.parent(value).filter(|p| p.is(kind::ASSIGNMENT)) else {
        return false;
    };
    let Some(target) = assignment.field("left").filter(|l| l.is(kind::IDENTIFIER)) else {
        return false;
    };
    if assignment.field("right").map(|r| r.id()) != Some(value.id()) {
        return false;
    }
    // Inside a function only: its body is one statement of the module for incremental checks.
    let Some(Some(function)) = context.semantic().function_around(call) else {
        return false;
    };
    // Not in a loop: a read earlier in the loop's body runs after the binding on the next
    // iteration, and the reads after the binding are not all of them.
    if context
        .enclosing(
            call,
            &["for_statement", "while_statement", "function_definition"],
        )
        .is_none_or(|enclosing| enclosing.id() != function.id())
    {
        return false;
    }
    let Some(reads) =
        context
            .semantic()
            .reads_after(function, node_text(target, source), assignment.end_byte())
    else {
        return false;
    };
    !reads.is_empty() && reads.iter().all(|read| copied_to_the_host(context, *read))
}

/// TPU501
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some(found) = dtype_use(context, call, "float64", "double", "float32", "float") else {
        return;
    };
    let hot = context.hot_path();
    let (message, severity) = match found.kind {
        DtypeUseKind::HostFactoryKeyword if hot.is_none() => return,
        DtypeUseKind::ShorthandOnTensor | DtypeUseKind::Conversion
            if hot.is_none()
                && (runs_on_the_host(context, call)
                    || copied_to_the_host(context, call)
                    || bound_for_the_host(context, call)) =>
        {
            return;
        }
        DtypeUseKind::DefaultDtype => (
            "Default dtype set to float64: TPUs have no native float64".to_string(),
            Severity::Warning,
        ),
        DtypeUseKind::Module => (
            "Model converted to float64: TPUs have no native float64".to_string(),
            Severity::Warning,
        ),
        _ => (
            format!(
                "float64 tensor{}: TPUs have no native float64",
                hot.map(|h| format!(" {}", h.describe()))
                    .unwrap_or_default()
            ),
            context.hot_path_severity(),
        ),
    };
    let fix = (!super::dtype_is_deliberate(context, call, &["float64", "double"]))
        .then(|| Fix::unsafe_edit("Use float32", vec![found.replacement]));
    let diagnostic = context.report(found.range, message);
    diagnostic.severity = severity;
    diagnostic.fix = fix;
}
