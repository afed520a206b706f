//! TPU212: max pooling with `dilation > 1`.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Severity;
use crate::rules::helpers;
use crate::syntax;

declare_rule! {
    /// ## What it does
    /// Checks for max pooling with a dilation greater than 1:
    /// `F.max_pool2d(x, k, s, p, dilation=2)`, `nn.MaxPool2d(k, dilation=2)` and the 1-D and 3-D
    /// forms.
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA's max-pooling lowering does not support dilation: its autograd function
    /// checks `IsNonTrivialDilation(dilation)` and calls the CPU fallback. Measured on torch_xla
    /// 2.9.0, the forward of every dilated max pool runs `aten::max_pool2d_with_indices` (or the
    /// 3-D op) on the CPU; the backward of `F.max_pool2d`, `F.max_pool3d` and the modules then
    /// **raised** ("Source shape does not match the shape of window-reduced operand"), so training
    /// through them fails, and the backward of `F.max_pool1d` and the `_with_indices` forms ran
    /// on the CPU as well. Each pooling layer copies its activations to the host and back.
    ///
    /// TorchTPU: not measured (it has no public CPU build). Its sources, as read by a third
    /// party, say that it has no silent CPU fallback: an op it does not implement raises unless
    /// `execution_mode.enable_cpu_fallback = True`; which of these ops it implements is not
    /// documented.
    ///
    /// ## Example
    /// ```python
    /// self.pool = nn.MaxPool2d(kernel_size=3, stride=1, padding=2, dilation=2)
    /// ```
    ///
    /// Use instead: an undilated pool with a kernel covering the same extent
    /// (`kernel_size=5, padding=2` spans what a dilated 3×3 spans), or a strided pool.
    ///
    /// ## Known problems
    /// A dilation given through a variable is not followed.
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `max_pool*.dilated*`; torch 2.9.0, torch_xla 2.9.0), produced by
    ///   `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `torch_xla/csrc/aten_autograd_ops.cpp` ("Lowering when ceil_mode or dilation
    ///   is set not supported yet") and `aten_xla_type.cpp` `max_pool2d_with_indices`
    pub(crate) static DILATED_MAX_POOL = {
        code: "TPU212",
        name: "dilated-max-pool",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["max_pool1d", "max_pool2d", "max_pool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "max_pool2d_with_indices", "max_pool3d_with_indices"],
        calls: ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool2d_with_indices", "max_pool3d_with_indices", "MaxPool1d", "MaxPool2d", "MaxPool3d"],
        check: check,
    }
}

/// Callee, and the position of `dilation` in its signature.
const POOLS: &[(&str, usize)] = &[
    ("torch.nn.functional.max_pool1d", 4),
    ("torch.max_pool1d", 4),
    ("torch.nn.MaxPool1d", 3),
    ("torch.nn.functional.max_pool2d", 4),
    ("torch.nn.functional.max_pool3d", 4),
    ("torch.nn.functional.max_pool2d_with_indices", 4),
    ("torch.nn.functional.max_pool3d_with_indices", 4),
    ("torch.max_pool2d", 4),
    ("torch.max_pool3d", 4),
    ("torch.nn.MaxPool2d", 3),
    ("torch.nn.MaxPool3d", 3),
];

/// TPU212
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    if !context
        .callee_name(call)
        .is_some_and(|name| name.starts_with("max_pool") || name.starts_with("MaxPool"))
    {
        return;
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    let Some(qualified) = context.qualified_name(function) else {
        return;
    };
    let Some(&(_, position)) = POOLS.iter().find(|(name, _)| *name == qualified) else {
        return;
    };
    let Some(dilation) = syntax::argument(arguments, position, "dilation", source) else {
        return;
    };
    let dilated = helpers::literal_numbers(dilation, source)
        .is_some_and(|values| values.iter().any(|value| *value > 1.0));
    if !dilated {
        return;
    }
    let is_module = qualified.starts_with("torch.nn.MaxPool");
    let message = format!(
        "Max pooling with dilation {}{} runs on the CPU (dilated pooling has no XLA lowering) and its backward can fail",
        helpers::short_code(context.text(dilation)),
        if is_module {
            String::new()
        } else {
            helpers::hot_path_suffix(context)
        }
    );
    let severity = if is_module {
        Severity::Warning
    } else {
        context.hot_path_severity()
    };
    context.report(dilation.byte_range(), message).severity = severity;
}
