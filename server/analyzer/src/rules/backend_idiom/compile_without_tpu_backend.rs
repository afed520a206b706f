//! TPU603: `torch.compile` with a backend that does not target the file's TPU backend
//! (PyTorch/XLA: none or a GPU one; TorchTPU: an explicit non-TPU one).

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Edit, Fix};
use crate::rules::tpu_api;
use crate::semantic::Backend;
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.compile(...)` (call or decorator) that will not compile for the TPU:
    /// - in PyTorch/XLA files, without `backend=` or with a GPU backend (`"inductor"`,
    ///   `"cudagraphs"`);
    /// - in TorchTPU files, with an explicit non-TPU backend (`"inductor"`, `"openxla"`,
    ///   `"cudagraphs"`).
    ///
    /// ## Why is this bad?
    /// `torch.compile`'s default backend is Inductor, which generates Triton/C++ kernels for GPUs
    /// and CPUs; it is not PyTorch/XLA's path, whose Dynamo integration is `backend="openxla"`.
    /// TorchTPU's backend is `backend="tpu"` (FX → StableHLO → XLA); there `torch.compile`
    /// without a backend selects `"tpu"` by itself when an input is a TPU tensor, so only an
    /// explicit other backend is wrong.
    ///
    /// ## Example
    /// ```python
    /// compiled = torch.compile(model)
    /// ```
    ///
    /// Use instead (TorchTPU):
    /// ```python
    /// compiled = torch.compile(model, backend="tpu", dynamic=False)
    /// ```
    /// or (PyTorch/XLA) `torch.compile(model, backend="openxla")`; for training steps
    /// PyTorch/XLA recommends `torch_xla.compile(step_fn)`.
    ///
    /// ## Fix safety
    /// The fix adds (or replaces) `backend=` with the file's backend. It is unsafe: the model is
    /// compiled by a different compiler, and the code no longer compiles for GPUs.
    ///
    /// ## Known problems
    /// Files whose backend is unknown are not checked, nor PyTorch/XLA files that import
    /// `torch_xla` only conditionally (they serve several devices).
    ///
    /// ## References
    /// - PyTorch/XLA, *Dynamo integration* (https://github.com/pytorch/xla/blob/master/docs/source/perf/dynamo.md): `backend="openxla"`
    /// - TorchTPU `tests/compile/compile_api_test.py` (`test_compile_backend_defaults_to_tpu`,
    ///   `test_compile_explicit_backend_is_respected`) and `docs/notebooks/advanced_compile.py`
    ///   (`torch.compile(model, backend="tpu", dynamic=False)`), https://github.com/google-pytorch/torch_tpu
    pub(crate) static COMPILE_WITHOUT_TPU_BACKEND = {
        code: "TPU603",
        name: "compile-without-tpu-backend",
        severity: Warning,
        fix: Always,
        kinds: ["call", "decorator"],
        tokens: ["compile"],
        calls: ["torch.compile"],
        check: check,
    }
}

/// TPU603
fn check<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    let wanted = match context.backend() {
        Backend::TorchXla => "openxla",
        Backend::TorchTpu => "tpu",
        Backend::Unknown => return,
    };
    // The cheap test first: this runs on every call in the file.
    let Some(site) = CompileSite::find(context, node) else {
        return;
    };
    if context.backend() == Backend::TorchXla
        && !tpu_api::imports_unconditionally(context, "torch_xla")
    {
        return;
    }
    let source = context.source();
    match site.arguments {
        Some(arguments) => {
            if syntax::has_splat(arguments) {
                return;
            }
            match context.keyword_arg(arguments, "backend") {
                // TorchTPU picks its own backend for TPU inputs.
                None if context.backend() == Backend::TorchTpu => {}
                None => {
                    let edit =
                        tpu_api::insert_argument(arguments, &format!("backend=\"{wanted}\""));
                    context
                        .report(site.callee.byte_range(), format!("`torch.compile` without `backend=\"{wanted}\"` uses Inductor, not the TPU"))
                        .fix = Some(Fix::unsafe_edit(format!("Add `backend=\"{wanted}\"`"), vec![edit]));
                }
                Some(value) => {
                    let Some(name) = syntax::string_value(value, source) else {
                        return;
                    };
                    let wrong = match context.backend() {
                        Backend::TorchTpu => {
                            matches!(name.as_ref(), "inductor" | "cudagraphs" | "openxla")
                        }
                        _ => matches!(name.as_ref(), "inductor" | "cudagraphs"),
                    };
                    if !wrong {
                        return;
                    }
                    let quote = if context.text(value).starts_with('\'') {
                        '\''
                    } else {
                        '"'
                    };
                    context
                        .report(
                            value.byte_range(),
                            format!("`torch.compile` backend `{name}` does not target the TPU"),
                        )
                        .fix = Some(Fix::unsafe_edit(
                        format!("Use `backend=\"{wanted}\"`"),
                        vec![Edit::replace(
                            value.byte_range(),
                            format!("{quote}{wanted}{quote}"),
                        )],
                    ));
                }
            }
        }
        None if context.backend() == Backend::TorchTpu => {}
        None => {
            // Bare `@torch.compile`.
            let edit = Edit::insert(site.callee.end_byte(), format!("(backend=\"{wanted}\")"));
            context
                .report(
                    site.callee.byte_range(),
                    format!(
                        "`torch.compile` without `backend=\"{wanted}\"` uses Inductor, not the TPU"
                    ),
                )
                .fix = Some(Fix::unsafe_edit(
                format!("Add `backend=\"{wanted}\"`"),
                vec![edit],
            ));
        }
    }
}

/// A `torch.compile` use: the callee expression and, unless it is a bare decorator, its arguments.
pub(crate) struct CompileSite<'t> {
    pub callee: Node<'t>,
    pub arguments: Option<Node<'t>>,
}

impl<'t> CompileSite<'t> {
    /// `torch.compile(...)` calls and bare `@torch.compile` decorators (not `@torch.compile(...)`,
    /// whose call is visited on its own).
    pub fn find(context: &Context<'t, '_>, node: Node<'t>) -> Option<CompileSite<'t>> {
        match node.kind_key() {
            kind::CALL => {
                let (function, arguments) = context.call_parts(node)?;
                (context.qualified_name(function).as_deref() == Some("torch.compile")).then_some(
                    CompileSite {
                        callee: function,
                        arguments: Some(arguments),
                    },
                )
            }
            kind::DECORATOR => {
                let expression = node.named_child(0)?;
                if !expression.is_any(&[kind::ATTRIBUTE, kind::IDENTIFIER]) {
                    return None;
                }
                (context.qualified_name(expression).as_deref() == Some("torch.compile")).then_some(
                    CompileSite {
                        callee: expression,
                        arguments: None,
                    },
                )
            }
            _ => None,
        }
    }
}
