//! TPU202: `F.interpolate` / `nn.Upsample` modes without an XLA lowering.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Severity;
use crate::rules::helpers;
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for `F.interpolate` / `F.upsample` calls and `nn.Upsample` modules whose mode has no
    /// XLA lowering: `"bicubic"`, `"linear"`, `"nearest-exact"`, `antialias=True`,
    /// `"nearest"` on one or three spatial dimensions (a one- or three-element `size` or
    /// `scale_factor`), and `"trilinear"` where gradients flow (its backward falls back).
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA lowers only `upsample_bilinear2d` and `upsample_nearest2d` (and their
    /// backwards), and `upsample_trilinear3d` through a registered decomposition.
    /// `upsample_bicubic2d`, `upsample_linear1d`, `_upsample_nearest_exact2d`, the anti-aliased
    /// variants and `upsample_nearest1d` are absent from its op table, so they fall back to the
    /// CPU: the tensor is copied to the host, resized
    /// there and copied back, on every call. Users see "ResizeBicubic is not supported" and
    /// steps that are orders of magnitude slower than on GPU.
    ///
    /// Measured on torch_xla 2.9.0 (XLA CPU device): every mode above ran its `aten::` op on the
    /// CPU forward and backward; `"trilinear"` ran forward on the device and
    /// `upsample_trilinear3d_backward` on the CPU; `"nearest"` on 1-D and 3-D inputs and
    /// `"area"` when the output size does not divide the input size fell back too. `"bilinear"`
    /// and 2-D `"nearest"` are lowered on a TPU (their backward falls back only on the CPU
    /// device: `aten_xla_type.cpp` lowers it `if CheckTpuDevice(...)`).
    ///
    /// TorchTPU: not measured (it has no public CPU build). Its sources, as read by a third
    /// party, say that it has no silent CPU fallback: an op it does not implement raises unless
    /// `execution_mode.enable_cpu_fallback = True`; which of these ops it implements is not
    /// documented.
    ///
    /// ## Example
    /// ```python
    /// up = F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False)
    /// self.upsample = nn.Upsample(scale_factor=2, mode="bicubic")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// up = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
    /// ```
    /// When the exact filter matters, resize in the data pipeline (on the host, once per
    /// sample) instead of inside the model.
    ///
    /// ## Known problems
    /// The rank of the input is not known statically, so `"nearest"` is reported only when a
    /// one- or three-element `size`/`scale_factor` shows the rank. `"area"` is not reported: it
    /// falls back only when the sizes do not divide, which is not known statically. `mode`
    /// given through a variable is not followed.
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `interpolate.*`, `upsample*`; torch 2.9.0, torch_xla 2.9.0), produced by
    ///   `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `codegen/xla_native_functions.yaml` (only bilinear2d / nearest2d upsampling)
    ///   and `torch_xla/_internal/decomp_registration.py` (`upsample_trilinear3d` decomposed;
    ///   `test_trilinear_interpolate` asserts no fallback)
    /// - PyTorch/XLA issues #7267 ("ResizeBicubic is not supported") and #4985
    pub(crate) static UNLOWERED_INTERPOLATION_MODE = {
        code: "TPU202",
        name: "unlowered-interpolation-mode",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["interpolate", "upsample", "Upsample"],
        calls: ["interpolate", "upsample", "Upsample"],
        check: check,
    }
}

/// Where the `mode` parameter sits in each callee's signature.
const INTERPOLATE_FUNCTIONS: &[(&str, usize)] = &[
    ("torch.nn.functional.interpolate", 3),
    ("torch.nn.functional.upsample", 3),
    ("torch.nn.Upsample", 2),
];

/// TPU202
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    if !context
        .callee_name(call)
        .is_some_and(|name| matches!(name, "interpolate" | "upsample" | "Upsample"))
    {
        return;
    }
    let Some(target) = helpers::torch_call(context, call) else {
        return;
    };
    if target.receiver.is_some() {
        return;
    }
    let Some(&(_, mode_position)) = INTERPOLATE_FUNCTIONS
        .iter()
        .find(|(name, _)| *name == target.name)
    else {
        return;
    };
    let is_module = target.name == "torch.nn.Upsample";
    if !is_module
        && syntax::positional_args(target.arguments)
            .first()
            .is_some_and(|input| helpers::is_on_host(context, *input))
    {
        return;
    }
    let arguments = target.arguments;
    // Positions are counted in the function form, where `input` comes first; the module has no
    // input argument.
    let mode_node = syntax::argument(arguments, mode_position, "mode", source);
    let mode = match mode_node {
        Some(node) => match syntax::string_value(node, source) {
            Some(mode) => mode.into_owned(),
            None => return, // a variable: not followed
        },
        None => "nearest".to_string(),
    };
    let (size_position, scale_position) = if is_module { (0, 1) } else { (1, 2) };
    let antialias = context
        .keyword_arg(arguments, "antialias")
        .and_then(helpers::literal_bool)
        .unwrap_or(false);
    let op = match mode.as_str() {
        "bicubic" if antialias => "_upsample_bicubic2d_aa",
        "bicubic" => "upsample_bicubic2d",
        "linear" => "upsample_linear1d",
        "nearest-exact" => "_upsample_nearest_exact",
        "bilinear" if antialias => "_upsample_bilinear2d_aa",
        // The forward decomposes into lowered ops; the backward was measured falling back.
        "trilinear"
            if !super::under_no_grad(context, call)
                && !super::result_leaves_autograd(
                    context,
                    applied_result(context, call, is_module),
                ) =>
        {
            "upsample_trilinear3d_backward"
        }
        "nearest" => {
            let spatial_dims = [
                syntax::argument(arguments, size_position, "size", source),
                syntax::argument(arguments, scale_position, "scale_factor", source),
            ]
            .into_iter()
            .flatten()
            .find_map(sequence_length);
            match spatial_dims {
                Some(1) => "upsample_nearest1d",
                Some(3) => "upsample_nearest3d",
                _ => return,
            }
        }
        _ => return,
    };
    let what = if antialias && mode_node.is_some() {
        format!("mode=\"{mode}\" with antialias=True")
    } else {
        format!("mode=\"{mode}\"")
    };
    let range = match mode_node {
        Some(node) if mode != "nearest" => node.byte_range(),
        _ => call
            .field("function")
            .map_or(call.byte_range(), |f| f.byte_range()),
    };
    let message = if is_module {
        format!("`nn.Upsample` with {what} runs `{op}` on the CPU: it has no XLA lowering")
    } else {
        format!(
            "Interpolation with {what}{} runs `{op}` on the CPU: it has no XLA lowering",
            helpers::hot_path_suffix(context)
        )
    };
    // A module is built once but runs in every forward pass.
    let severity = if is_module {
        Severity::Warning
    } else {
        context.hot_path_severity()
    };
    context.report(range, message).severity = severity;
}

/// The number of elements of a literal `size` / `scale_factor` sequence: its spatial rank.
fn sequence_length(node: Node<'_>) -> Option<usize> {
    let node = syntax::unparenthesize(node);
    if !node.is_any(&[kind::TUPLE, kind::LIST]) {
        return None;
    }
    Some(
        node.named_nodes()
            .filter(|child| child.is_not(kind::COMMENT))
            .count(),
    )
}

/// The node that holds the resized tensor: the call itself, or for the module form applied
/// where it is built (`nn.Upsample(size=s, mode="trilinear")(x)`) the call of the new module.
fn applied_result<'t>(context: &Context<'t, '_>, call: Node<'t>, is_module: bool) -> Node<'t> {
    if !is_module {
        return call;
    }
    context
        .parent(call)
        .filter(|parent| {
            parent.is(kind::CALL)
                && parent
                    .field("function")
                    .is_some_and(|f| f.id() == call.id())
        })
        .unwrap_or(call)
}
