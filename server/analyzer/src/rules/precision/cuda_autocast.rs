//! TPU504: autocast for the `"cuda"` device in code that runs on a TPU.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Edit, Fix, Severity};
use crate::fix::importer::Importer;
use crate::kind;
use crate::rules::helpers;
use crate::semantic::Backend;
use crate::syntax::{self, NodeExt, node_text};

declare_rule! {
    /// ## What it does
    /// Checks for autocast regions bound to CUDA: `torch.autocast("cuda")`,
    /// `torch.autocast(device_type="cuda")`, `torch.amp.autocast("cuda")` and
    /// `torch.cuda.amp.autocast()`.
    ///
    /// ## Why is this bad?
    /// Autocast is per device type. A CUDA autocast region does nothing for XLA/TPU tensors, so
    /// the model silently runs in float32; and on a TPU host it fails outright with
    /// `RuntimeError: Current CUDA Device does not support bfloat16` when asked for bfloat16.
    /// PyTorch/XLA's autocast uses the device type `"xla"` (bfloat16 by default on TPU);
    /// TorchTPU maps `torch.amp.autocast("cuda")` to `torch.amp.autocast("tpu")`.
    ///
    /// ## Example
    /// ```python
    /// with torch.cuda.amp.autocast():
    ///     loss = criterion(model(x), y)
    /// ```
    ///
    /// Use instead (PyTorch/XLA):
    /// ```python
    /// with torch.autocast("xla", dtype=torch.bfloat16):
    ///     loss = criterion(model(x), y)
    /// ```
    /// or `torch.autocast("tpu")` with TorchTPU.
    ///
    /// ## Fix safety
    /// The fix replaces the device type with the file's backend (`"xla"` or `"tpu"`), and
    /// rewrites `torch.cuda.amp.autocast(...)` to `torch.autocast("<device>", ...)` when all its
    /// arguments are keywords. It is unsafe: the code no longer autocasts on GPUs, and a
    /// `dtype=torch.float16` argument should become bfloat16 (TPU503). No fix is offered when
    /// the backend is unknown.
    ///
    /// A CUDA autocast with `enabled=False` (a region kept in float32 inside a mixed-precision
    /// model: rotary embeddings, quantisers) is reported at information severity with its own
    /// message: it does not turn off a TPU autocast around it, so that region runs in bfloat16
    /// when the model runs under `torch.autocast("xla")`, and in float32 as intended otherwise.
    ///
    /// ## Known problems
    /// The severity is `Error` in files that target a TPU backend, `Warning` otherwise (GPU
    /// code that may be ported); `Info` for `enabled=False`. Autocast inside a branch that tests
    /// for CUDA (`if device.type == "cuda":`) is not reported.
    ///
    /// ## References
    /// - pytorch/pytorch issue #115900; PyTorch/XLA *AMP* (`docs/source/perf/amp.md`)
    /// - TorchTPU `docs/notebooks/api_mapping.py` (`torch.amp.autocast("tpu")`), notes A.2
    pub(crate) static CUDA_AUTOCAST = {
        code: "TPU504",
        name: "cuda-autocast",
        severity: Error,
        fix: Sometimes,
        kinds: ["call"],
        tokens: ["autocast"],
        calls: ["autocast"],
        check: check,
    }
}

/// TPU504
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    if context.callee_name(call) != Some("autocast") {
        return;
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    let Some(qualified) = context.qualified_name(function) else {
        return;
    };
    // `if device.type == "cuda": with torch.autocast("cuda"):` is a CUDA-only branch.
    if helpers::in_branch_testing(context, call, &["cuda"]) {
        return;
    }
    let backend = context.backend();
    let device = backend.device_type();
    let severity = if backend == Backend::Unknown {
        Severity::Warning
    } else {
        Severity::Error
    };
    // `enabled` is the first positional argument of `torch.cuda.amp.autocast`, the third of
    // `torch.autocast(device_type, dtype, enabled)`.
    let enabled_position = if qualified.starts_with("torch.cuda.") {
        0
    } else {
        2
    };
    let disables = syntax::argument(arguments, enabled_position, "enabled", source)
        .is_some_and(|enabled| enabled.is(kind::FALSE));
    let (severity, message_end) = if disables {
        (
            Severity::Info,
            " with `enabled=False` does not turn off a TPU autocast: under \
             `torch.autocast(\"xla\")` this region runs in bfloat16",
        )
    } else {
        (severity, " does not apply to TPU tensors")
    };
    match qualified.as_str() {
        "torch.autocast" | "torch.amp.autocast" | "torch.amp.autocast_mode.autocast" => {
            let Some(device_type) = syntax::argument(arguments, 0, "device_type", source) else {
                return;
            };
            if syntax::string_value(device_type, source).as_deref() != Some("cuda") {
                return;
            }
            let quote = if node_text(device_type, source).starts_with('\'') {
                '\''
            } else {
                '"'
            };
            let fix = device.map(|device| {
                Fix::unsafe_edit(
                    format!("Replace with `{quote}{device}{quote}`"),
                    vec![Edit::replace(
                        device_type.byte_range(),
                        format!("{quote}{device}{quote}"),
                    )],
                )
            });
            let diagnostic = context.report(
                device_type.byte_range(),
                format!("Autocast for `\"cuda\"`{message_end}"),
            );
            diagnostic.severity = severity;
            diagnostic.fix = fix;
        }
        "torch.cuda.amp.autocast" | "torch.cuda.amp.autocast_mode.autocast" => {
            let all_keywords = syntax::positional_args(arguments).is_empty();
            let fix = device.filter(|_| all_keywords).map(|device| {
                let device_text = format!("\"{device}\"");
                let autocast = Importer::new(context, function).member("torch", "autocast", None);
                let mut edits = autocast.edits();
                edits.push(Edit::replace(
                    function.byte_range(),
                    autocast.expression.clone(),
                ));
                let open = arguments.start_byte() + 1;
                let has_arguments = arguments.named_child_count() > 0;
                edits.push(Edit::insert(
                    open,
                    if has_arguments {
                        format!("{device_text}, ")
                    } else {
                        device_text.clone()
                    },
                ));
                Fix::unsafe_edit(
                    format!("Replace with `{}({device_text})`", autocast.expression),
                    edits,
                )
            });
            let diagnostic = context.report(
                function.byte_range(),
                format!("`torch.cuda.amp.autocast`{message_end}"),
            );
            diagnostic.severity = severity;
            diagnostic.fix = fix;
        }
        _ => {}
    }
}
