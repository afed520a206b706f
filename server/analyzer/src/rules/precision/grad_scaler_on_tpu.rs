//! TPU505: a CUDA/AMP `GradScaler` in bfloat16 or TPU code.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;
use crate::semantic::Backend;
use crate::syntax;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.cuda.amp.GradScaler()`, `torch.amp.GradScaler()` and
    /// `torch.GradScaler()` in files that target a TPU backend or enter autocast with bfloat16.
    ///
    /// ## Why is this bad?
    /// Loss scaling exists for float16's narrow exponent range. With bfloat16, the TPU's mixed
    /// precision type, "gradient scaling is not necessary" (PyTorch/XLA AMP guide). The scaler
    /// still costs every step: it checks all gradients for infinities and reads the result on
    /// the host to decide whether to skip the step, a host sync per step on a TPU.
    ///
    /// ## Example
    /// ```python
    /// scaler = torch.cuda.amp.GradScaler()
    /// with torch.autocast("xla", dtype=torch.bfloat16):
    ///     loss = model(x)
    /// scaler.scale(loss).backward()
    /// scaler.step(optimizer)
    /// scaler.update()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// with torch.autocast("xla", dtype=torch.bfloat16):
    ///     loss = model(x)
    /// loss.backward()
    /// optimizer.step()
    /// ```
    /// With PyTorch/XLA and float16 on XLA:GPU, use `torch_xla.amp.GradScaler` and the
    /// `torch_xla.amp.syncfree` optimizers instead.
    ///
    /// ## Known problems
    /// `GradScaler(enabled=...)` with anything but a literal `True` is taken to be disabled on
    /// TPU (usually `enabled=use_fp16`) and not reported; so are `GradScaler(**kwargs)` and
    /// scalers for another device (`GradScaler("mps")`). Without a TPU backend, bfloat16 use is
    /// recognised only on a line that calls `autocast(` with `bfloat16`.
    ///
    /// ## References
    /// - PyTorch/XLA *AMP*, best practices (`docs/source/perf/amp.md`); pytorch/xla PR #4740
    pub(crate) static GRAD_SCALER_ON_TPU = {
        code: "TPU505",
        name: "grad-scaler-on-tpu",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["GradScaler"],
        calls: ["GradScaler"],
        check: check,
    }
}

/// TPU505
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    if context.callee_name(call) != Some("GradScaler") {
        return;
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    if !matches!(
        context.qualified_name(function).as_deref(),
        Some(
            "torch.cuda.amp.GradScaler"
                | "torch.amp.GradScaler"
                | "torch.GradScaler"
                | "torch.cuda.amp.grad_scaler.GradScaler"
                | "torch.amp.grad_scaler.GradScaler"
        )
    ) {
        return;
    }
    // `GradScaler(**kwargs)` may carry `enabled=`; `GradScaler("mps")` is for another device.
    if syntax::has_splat(arguments)
        || syntax::argument(arguments, 0, "device", source)
            .is_some_and(|device| syntax::string_value(device, source).is_none_or(|d| d != "cuda"))
    {
        return;
    }
    if let Some(enabled) = context.keyword_arg(arguments, "enabled")
        && helpers::literal_bool(enabled) != Some(true)
    {
        return;
    }
    // Made only for float16 precision (`if precision == "16-mixed":`): loss scaling is what
    // float16 needs; a TPU run takes the bfloat16 branch.
    if context.semantic().hardware_scope().float16_only {
        return;
    }
    let reason = if context.backend() != Backend::Unknown {
        "on TPU"
    } else if autocasts_to_bfloat16(source) {
        "with bfloat16"
    } else {
        return;
    };
    let message = format!(
        "`GradScaler` is unnecessary {reason}: bfloat16 needs no loss scaling, and its inf check syncs the host every step"
    );
    context.report(function.byte_range(), message);
}

/// A line that enters autocast with bfloat16 (`torch.autocast("cuda", dtype=torch.bfloat16)`).
fn autocasts_to_bfloat16(source: &str) -> bool {
    source
        .lines()
        .any(|line| line.contains("autocast(") && line.contains("bfloat16"))
}
