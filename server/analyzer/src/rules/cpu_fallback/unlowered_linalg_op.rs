//! TPU206: `torch.linalg` ops (or argument choices) without an XLA lowering.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;

declare_rule! {
    /// ## What it does
    /// Checks for linear-algebra ops that PyTorch/XLA runs on the CPU:
    /// `torch.linalg.eig` / `eigvals`, `lstsq`, `lu` / `lu_factor` / `lu_solve` (and the
    /// older `torch.lu` / `torch.lu_solve`), `orgqr` / `ormqr` / `householder_product`,
    /// `torch.linalg.eigvalsh` (eigenvalues only), and `torch.linalg.inv_ex(...,
    /// check_errors=True)`.
    ///
    /// ## Why is this bad?
    /// These ops are absent from PyTorch/XLA's op table or explicitly fall back: `_linalg_eigh`
    /// falls back when eigenvectors are not requested (`eigvalsh`), and `linalg_inv_ex` falls
    /// back when `check_errors=True`. Each call copies the matrices to the host, factorises them
    /// on the CPU and copies the result back.
    ///
    /// ## Example
    /// ```python
    /// evals = torch.linalg.eigvalsh(cov)
    /// solution = torch.linalg.lstsq(A, B).solution
    /// ```
    ///
    /// Use instead: the lowered decompositions.
    /// ```python
    /// evals, _ = torch.linalg.eigh(cov)          # eigenvectors requested: lowered
    /// solution = torch.linalg.pinv(A) @ B        # or a Cholesky solve of the normal equations
    /// ```
    /// `eigh`, `inv`, `cholesky`, `qr`, `svd`, `slogdet`, `pinv` and `solve` lower.
    ///
    /// ## References
    /// - tpulint TPU pitfall catalog B.3 #25 and "Ops with known missing lowerings" (B.7)
    /// - PyTorch/XLA `torch_xla/csrc/aten_xla_type.cpp` (`_linalg_eigh` with `compute_v=False`,
    ///   `linalg_inv_ex` with `check_errors`), `autocast_mode.cpp` (`lu_solve`, `orgqr`, `ormqr`
    ///   "not lowered"), `codegen/xla_native_functions.yaml`
    pub(crate) static UNLOWERED_LINALG_OP = {
        code: "TPU206",
        name: "unlowered-linalg-op",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        check: check,
    }
}

/// Ops that always fall back, with a lowered alternative.
const ALWAYS_FALLBACK: &[(&str, &str)] = &[
    (
        "torch.linalg.eig",
        "use `torch.linalg.eigh` for symmetric matrices",
    ),
    (
        "torch.linalg.eigvals",
        "use `torch.linalg.eigh` for symmetric matrices",
    ),
    (
        "torch.linalg.lstsq",
        "use `torch.linalg.pinv(A) @ B` or a Cholesky solve",
    ),
    ("torch.linalg.lu", "use `torch.linalg.solve` or `cholesky`"),
    (
        "torch.linalg.lu_factor",
        "use `torch.linalg.solve` or `cholesky`",
    ),
    (
        "torch.linalg.lu_factor_ex",
        "use `torch.linalg.solve` or `cholesky`",
    ),
    (
        "torch.linalg.lu_solve",
        "use `torch.linalg.solve` or `cholesky_solve`",
    ),
    ("torch.lu", "use `torch.linalg.solve` or `cholesky`"),
    (
        "torch.lu_solve",
        "use `torch.linalg.solve` or `cholesky_solve`",
    ),
    ("torch.orgqr", "use `torch.linalg.qr`"),
    ("torch.ormqr", "use `torch.linalg.qr`"),
    ("torch.linalg.householder_product", "use `torch.linalg.qr`"),
];

/// TPU206
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    let Some(target) = helpers::torch_call(context, call) else {
        return;
    };
    if target.receiver.is_some() {
        return;
    }
    let name = target.name.as_str();
    let advice = if let Some((_, advice)) = ALWAYS_FALLBACK.iter().find(|(op, _)| *op == name) {
        *advice
    } else if name == "torch.linalg.eigvalsh" {
        "use `torch.linalg.eigh` (eigenvalues only fall back)"
    } else if name == "torch.linalg.inv_ex" {
        let checks = target
            .argument(1, "check_errors", source)
            .and_then(helpers::literal_bool)
            .unwrap_or(false);
        if !checks {
            return;
        }
        "drop `check_errors=True` (or use `torch.linalg.inv`)"
    } else {
        return;
    };
    if target
        .input(context.source())
        .is_some_and(|input| helpers::is_on_host(context, input))
    {
        return;
    }
    let Some((function, _)) = context.call_parts(call) else {
        return;
    };
    let what = if name == "torch.linalg.inv_ex" {
        format!("`{}(..., check_errors=True)`", context.text(function))
    } else {
        format!("`{}`", context.text(function))
    };
    let message = format!(
        "{what} has no XLA lowering and runs on the CPU{}; {advice}",
        helpers::hot_path_suffix(context)
    );
    let severity = context.hot_path_severity();
    context.report(function.byte_range(), message).severity = severity;
}
