//! TPU503: float16 where the TPU's native low precision is bfloat16.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Fix, Severity};
use crate::rules::helpers;
use crate::rules::precision::dtype_use::{DtypeUseKind, dtype_use};
use crate::semantic::Backend;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for float16 requested on tensors and models: `dtype=torch.float16` /
    /// `torch.half` (including `torch_dtype=` of `from_pretrained`), `.to(torch.float16)`,
    /// `.half()`, and `torch.set_default_dtype(torch.float16)`.
    ///
    /// ## Why is this bad?
    /// The TPU's matrix units multiply bfloat16 natively; float16 is not their low-precision
    /// format. PyTorch/XLA's migration guide says to use bfloat16 for mixed precision on TPU,
    /// and its autocast targets bfloat16. Float16 code ported from GPUs keeps float16's narrow
    /// exponent range (overflow, loss scaling) without gaining speed.
    ///
    /// ## Example
    /// ```python
    /// pipe = Pipeline.from_pretrained(path, torch_dtype=torch.float16)
    /// model = model.half()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// pipe = Pipeline.from_pretrained(path, torch_dtype=torch.bfloat16)
    /// model = model.to(torch.bfloat16)
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces `float16` / `half` with `bfloat16`. It is unsafe: bfloat16 has fewer
    /// mantissa bits, and code that checks for `torch.float16` elsewhere (or a `GradScaler`)
    /// may need the same change. It is not offered where the code visibly relies on float16:
    /// the same statement casts the result back (`x.half().matmul(w).float()`), or an `assert`
    /// in the block checks the `.dtype`.
    ///
    /// ## Known problems
    /// Only files that target a TPU backend (imports of `torch_xla` / `torch_tpu`, `"xla"` /
    /// `"tpu"` devices, or the `backend` setting) are checked: in GPU code float16 is the right
    /// choice. Float16 chosen in a branch that tests the dtype (`if needs_upcasting:`,
    /// `... if dtype == torch.float16 else ...`), conversions of state dicts for saving, and
    /// methods of tensors known to be on the CPU are not reported.
    ///
    /// ## References
    /// - PyTorch/XLA, *Migration to XLA on TPUs — Mixed precision*
    ///   (`docs/source/learn/migration-to-xla-on-tpus.md`) and *AMP* (`docs/source/perf/amp.md`)
    /// - TorchTPU notes A.7 (MXU multiplies bfloat16, accumulates float32)
    pub(crate) static FLOAT16_DTYPE = {
        code: "TPU503",
        name: "float16-dtype",
        severity: Warning,
        fix: Sometimes,
        kinds: ["call"],
        check: check,
    }
}

/// TPU503
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    // In GPU code not being ported, float16 is the right choice.
    if context.backend() == Backend::Unknown {
        return;
    }
    let Some(found) = dtype_use(context, call, "float16", "half", "bfloat16", "bfloat16") else {
        return;
    };
    // `torch.autocast("cuda", dtype=torch.float16)` / `torch.cuda.amp.autocast(...)`: TPU504
    // reports the CUDA autocast itself; its dtype is part of that finding.
    if is_cuda_autocast(context, call) {
        return;
    }
    // `if needs_upcasting: vae.to(torch.float16)` restores the caller's dtype, and
    // `x.half() if dtype == torch.float16 else x` follows it.
    if helpers::in_branch_testing(
        context,
        call,
        &["float16", "half", "fp16", "upcast", "dtype"],
    ) {
        return;
    }
    // `{k: v.half() for k, v in state_dict.items()}`: a checkpoint's storage format.
    if in_state_dict_conversion(context, call) {
        return;
    }
    let subject = match found.kind {
        DtypeUseKind::DefaultDtype => "Default dtype set to float16",
        DtypeUseKind::Module => "Model converted to float16",
        _ => "float16",
    };
    let message = format!("{subject}: bfloat16 is the TPU's native low-precision type");
    let severity = Severity::Warning;
    let fix = (!super::dtype_is_deliberate(context, call, &["float16", "half"]))
        .then(|| Fix::unsafe_edit("Use bfloat16", vec![found.replacement]));
    let diagnostic = context.report(found.range, message);
    diagnostic.severity = severity;
    diagnostic.fix = fix;
}

/// Inside a comprehension over a state dict, or a call chain that saves (`.save_pretrained`).
fn in_state_dict_conversion<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let mut current = context.parent(call);
    while let Some(ancestor) = current {
        match ancestor.kind_key() {
            kind::FUNCTION_DEFINITION | kind::CLASS_DEFINITION | kind::LAMBDA | kind::MODULE => {
                return false;
            }
            kind::DICTIONARY_COMPREHENSION
            | kind::LIST_COMPREHENSION
            | kind::GENERATOR_EXPRESSION
                if context.text(ancestor).contains("state_dict") =>
            {
                return true;
            }
            kind::ATTRIBUTE
                if ancestor.field("attribute").is_some_and(|attribute| {
                    matches!(context.text(attribute), "save_pretrained" | "save")
                }) =>
            {
                return true;
            }
            kind::EXPRESSION_STATEMENT | kind::ASSIGNMENT | kind::RETURN_STATEMENT => return false,
            _ => {}
        }
        current = context.parent(ancestor);
    }
    false
}

/// `torch.autocast("cuda", ...)`, `torch.autocast(device_type="cuda", ...)` or
/// `torch.cuda.amp.autocast(...)`.
fn is_cuda_autocast<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let Some((function, arguments)) = context.call_parts(call) else {
        return false;
    };
    match context.qualified_name(function).as_deref() {
        Some("torch.cuda.amp.autocast" | "torch.cuda.amp.autocast_mode.autocast") => true,
        Some("torch.autocast" | "torch.amp.autocast") => {
            crate::syntax::argument(arguments, 0, "device_type", context.source())
                .and_then(|device| crate::syntax::string_value(device, context.source()))
                .is_some_and(|device| device == "cuda")
        }
        _ => false,
    }
}
