//! TPU206: `torch.linalg` ops (or argument choices) without an XLA lowering.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;

declare_rule! {
    /// ## What it does
    /// Checks for linear-algebra ops that PyTorch/XLA runs on the CPU:
    /// `torch.linalg.eig` / `eigvals`, `qr`, `cholesky` / `cholesky_ex`, `det` (and `torch.det`),
    /// `solve`, `lstsq`, `lu` / `lu_factor` / `lu_solve` (and the older `torch.lu` /
    /// `torch.lu_solve`), `orgqr` / `ormqr` / `householder_product`, and
    /// `torch.linalg.inv_ex(..., check_errors=True)`.
    ///
    /// ## Why is this bad?
    /// These ops are absent from PyTorch/XLA's op table or explicitly fall back. Measured on
    /// torch_xla 2.9.0, each ran its `aten::` op on the CPU (`linalg_eig`, `linalg_qr`,
    /// `linalg_cholesky_ex`, `_linalg_det`, `_linalg_solve_ex`, `linalg_lstsq`,
    /// `linalg_lu_factor_ex`, `linalg_householder_product`, `ormqr`, `linalg_inv_ex` with
    /// `check_errors=True`). Each call copies the matrices to the host, factorises them on the
    /// CPU and copies the result back.
    ///
    /// ## Example
    /// ```python
    /// chol = torch.linalg.cholesky(cov)
    /// solution = torch.linalg.lstsq(A, B).solution
    /// ```
    ///
    /// Use instead: the ops the same measurement found lowered.
    /// ```python
    /// chol = torch.cholesky(cov)                  # the older entry point is lowered
    /// solution = torch.linalg.pinv(A) @ B         # pinv lowers
    /// ```
    /// `eigh`, `eigvalsh`, `svd`, `svdvals`, `slogdet`, `pinv`, `inv_ex` (without
    /// `check_errors`), `matrix_norm` and the older `torch.cholesky`, `torch.qr`, `torch.inverse`
    /// lower; `torch.linalg.inv` and `torch.inverse` lower but read a value to the host (their
    /// error check).
    ///
    /// ## Known problems
    /// TorchTPU: no public CPU build to measure; the finding speaks of PyTorch/XLA.
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `linalg.*`, `torch.lu*`, `torch.orgqr`, `torch.ormqr`, `torch.det`, `torch.cholesky`;
    ///   torch 2.9.0, torch_xla 2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `codegen/xla_native_functions.yaml` (`cholesky`, `qr`, `inverse`,
    ///   `_linalg_eigh`, `_linalg_slogdet`, `_linalg_svd`, `linalg_inv_ex` present; `linalg_qr`,
    ///   `linalg_cholesky_ex`, `_linalg_det`, `_linalg_solve_ex` absent) and
    ///   `torch_xla/csrc/aten_xla_type.cpp` (`linalg_inv_ex` with `check_errors`)
    pub(crate) static UNLOWERED_LINALG_OP = {
        code: "TPU206",
        name: "unlowered-linalg-op",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        calls: ["eig", "eigvals", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "orgqr", "ormqr", "householder_product", "qr", "cholesky", "cholesky_ex", "det", "solve", "inv_ex"],
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
    (
        "torch.linalg.lu",
        "use `torch.linalg.inv_ex(A).inverse @ B` or `torch.cholesky`",
    ),
    (
        "torch.linalg.lu_factor",
        "use `torch.linalg.inv_ex(A).inverse @ B` or `torch.cholesky`",
    ),
    (
        "torch.linalg.lu_factor_ex",
        "use `torch.linalg.inv_ex(A).inverse @ B` or `torch.cholesky`",
    ),
    (
        "torch.linalg.lu_solve",
        "use `torch.linalg.inv_ex(A).inverse @ B`",
    ),
    (
        "torch.lu",
        "use `torch.linalg.inv_ex(A).inverse @ B` or `torch.cholesky`",
    ),
    ("torch.lu_solve", "use `torch.linalg.inv_ex(A).inverse @ B`"),
    ("torch.orgqr", "use `torch.qr`"),
    ("torch.ormqr", "use `torch.qr`"),
    ("torch.linalg.householder_product", "use `torch.qr`"),
    ("torch.linalg.qr", "use `torch.qr`, which lowers"),
    (
        "torch.linalg.cholesky",
        "use `torch.cholesky`, which lowers",
    ),
    (
        "torch.linalg.cholesky_ex",
        "use `torch.cholesky`, which lowers",
    ),
    (
        "torch.linalg.det",
        "use `torch.linalg.slogdet` (`sign * logabsdet.exp()`)",
    ),
    (
        "torch.det",
        "use `torch.linalg.slogdet` (`sign * logabsdet.exp()`)",
    ),
    (
        "torch.linalg.solve",
        "use `torch.linalg.inv_ex(A).inverse @ B` or `pinv`",
    ),
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
