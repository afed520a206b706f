//! TPU506: the deprecated `XLA_USE_BF16` / `XLA_DOWNCAST_BF16` / `XLA_USE_32BIT_LONG` settings.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::DiagnosticTag;
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for code that sets the PyTorch/XLA environment variables `XLA_USE_BF16`,
    /// `XLA_DOWNCAST_BF16` or `XLA_USE_32BIT_LONG`: `os.environ["XLA_USE_BF16"] = "1"`,
    /// `os.environ.setdefault(...)`, `os.putenv(...)`, and environment dictionaries
    /// (`{"XLA_USE_BF16": "1"}`).
    ///
    /// ## Why is this bad?
    /// These flags silently change every float (or int64) tensor's storage type behind
    /// PyTorch's back, and PyTorch/XLA prints that they "will be deprecated after the 2.6
    /// release, please convert your model to bf16 directly". Code relying on them breaks when
    /// they are removed, and never worked on TorchTPU.
    ///
    /// In a file that uses Pallas kernels (`torch_xla.experimental.custom_kernel`:
    /// `flash_attention`, `gmm`, `make_kernel_from_pallas`, ...), `XLA_USE_BF16=1` is an error:
    /// the module reads the variable when imported and every kernel call raises
    /// `RuntimeError: Pallas kernel does not support XLA_USE_BF16, please unset the env var`.
    ///
    /// ## Example
    /// ```python
    /// os.environ["XLA_USE_BF16"] = "1"
    /// model = Net().to(device)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = Net().to(device, dtype=torch.bfloat16)
    /// # or keep float32 weights and run the forward under torch.autocast("xla", dtype=torch.bfloat16)
    /// ```
    ///
    /// ## Known problems
    /// Setting a variable to `"0"` is not reported. Reading it (`os.environ.get(...)`) is not
    /// reported.
    ///
    /// ## References
    /// - PyTorch/XLA `torch_xla/csrc/dtype.cpp` (deprecation messages)
    /// - https://github.com/pytorch/xla/blob/v2.9.0/torch_xla/experimental/custom_kernel.py
    ///   (`_XLA_USE_BF16` read at import; the Pallas `RuntimeError`)
    /// - https://github.com/pytorch/xla/issues/8915 (deprecation tracker)
    pub(crate) static DEPRECATED_XLA_PRECISION_ENV = {
        code: "TPU506",
        name: "deprecated-xla-precision-env",
        severity: Warning,
        fix: None,
        kinds: ["string"],
        tokens: ["XLA_USE_BF16", "XLA_DOWNCAST_BF16", "XLA_USE_32BIT_LONG"],
        check: check,
    }
}

const VARIABLES: &[&str] = &["XLA_USE_BF16", "XLA_DOWNCAST_BF16", "XLA_USE_32BIT_LONG"];

/// TPU506
fn check<'t>(context: &mut Context<'t, '_>, string: Node<'t>) {
    let source = context.source();
    let Some(value) = syntax::string_value(string, source) else {
        return;
    };
    let Some(variable) = VARIABLES.iter().copied().find(|v| *v == value) else {
        return;
    };
    let Some(assigned) = assigned_value(context, string) else {
        return;
    };
    if assigned.is_some_and(|v| is_off(v, source)) {
        return;
    }
    let advice = if variable == "XLA_USE_32BIT_LONG" {
        "cast index tensors to `torch.int32` directly"
    } else {
        "convert the model with `.to(torch.bfloat16)` or use autocast"
    };
    if variable == "XLA_USE_BF16"
        && context
            .semantic()
            .imports_module("torch_xla.experimental.custom_kernel")
    {
        let diagnostic = context.report(
            string.byte_range(),
            "`XLA_USE_BF16` makes the Pallas kernels of `torch_xla.experimental.custom_kernel` raise `RuntimeError`; convert the model with `.to(torch.bfloat16)`",
        );
        diagnostic.severity = crate::diagnostic::Severity::Error;
        return;
    }
    let message = format!("`{variable}` is deprecated by PyTorch/XLA; {advice}");
    context.report(string.byte_range(), message).tag = Some(DiagnosticTag::Deprecated);
}

/// When `string` names a variable being set: `Some(value)` (the value node when visible).
fn assigned_value<'t>(context: &Context<'t, '_>, string: Node<'t>) -> Option<Option<Node<'t>>> {
    let parent = context.parent(string)?;
    match parent.kind_key() {
        // os.environ["X"] = value
        kind::SUBSCRIPT => {
            let value = parent.field("value")?;
            if context.qualified_name(value).as_deref() != Some("os.environ") {
                return None;
            }
            let assignment = context.parent(parent)?;
            if assignment.is_not(kind::ASSIGNMENT)
                || assignment
                    .field("left")
                    .is_none_or(|left| left.id() != parent.id())
            {
                return None;
            }
            Some(assignment.field("right"))
        }
        // os.environ.setdefault("X", value) / os.putenv("X", value)
        kind::ARGUMENT_LIST => {
            let call = context.parent(parent)?;
            let (function, arguments) = context.call_parts(call)?;
            let qualified = context.qualified_name(function)?;
            if !matches!(qualified.as_str(), "os.environ.setdefault" | "os.putenv") {
                return None;
            }
            let positional = syntax::positional_args(arguments);
            if positional
                .first()
                .is_none_or(|first| first.id() != string.id())
            {
                return None;
            }
            Some(positional.get(1).copied())
        }
        // {"X": value}
        // {"X": "1"}: only with a literal value (a dict saving `os.environ.get("X")` to
        // restore it later sets nothing).
        kind::PAIR => {
            if parent
                .field("key")
                .is_none_or(|key| key.id() != string.id())
            {
                return None;
            }
            let value = parent.field("value")?;
            syntax::string_value(value, context.source())?;
            Some(Some(value))
        }
        _ => None,
    }
}

/// `"0"`, `"false"`, `0`, `False`, `str(0)`.
fn is_off(value: Node<'_>, source: &str) -> bool {
    if let Some((function, arguments)) = syntax::call_parts(value)
        && syntax::text_is(function, source, "str")
        && let Some(inner) = syntax::positional_args(arguments).first()
    {
        return is_off(*inner, source);
    }
    if let Some(text) = syntax::string_value(value, source) {
        return matches!(
            text.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | ""
        );
    }
    value.is_any(&[kind::FALSE, kind::NONE]) || syntax::text_is(value, source, "0")
}
