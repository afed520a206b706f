//! TPU404: `torch.cuda.*` calls that raise or do nothing on a TPU.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Applicability, Edit, Fix, Severity};
use crate::fix::importer::Importer;
use crate::rules::tpu_api;
use crate::semantic::Backend;
use crate::syntax;
use crate::syntax::NodeExt;
use crate::torch_api;

declare_rule! {
    /// ## What it does
    /// Checks for calls of CUDA-only APIs such as `torch.cuda.synchronize()`,
    /// `torch.cuda.mem_get_info()`, `torch.cuda.manual_seed()`,
    /// `torch.cuda.set_device()` and `torch.cuda.device_count()`. Availability checks
    /// (`torch.cuda.is_available()`) and calls under such a check are not reported.
    ///
    /// ## Why is this bad?
    /// A TPU VM runs a CPU build of PyTorch without CUDA. Calls that initialise CUDA
    /// (`synchronize`, `set_device`, `current_device`, `get_device_properties`, streams and
    /// events) raise `Torch not compiled with CUDA enabled` or "Found no NVIDIA driver"; so do,
    /// measured on torch 2.9.0, `reset_peak_memory_stats()`, `memory_summary()`,
    /// `ipc_collect()` and the NVML readings (`utilization()`). The others do nothing
    /// silently: `manual_seed` seeds no TPU generator, `device_count` returns 0 (wrong world
    /// sizes), and the memory readings (`memory_allocated()`, `max_memory_allocated()`,
    /// `memory_reserved()`) return 0, so a log's "peak 0.0 GiB" describes nothing (reported
    /// as information). Each backend has its own equivalent.
    ///
    /// ## Example
    /// ```python
    /// torch.cuda.manual_seed_all(seed)
    /// start = time.time()
    /// loss = train_step(batch)
    /// torch.cuda.synchronize()
    /// print(time.time() - start, torch.cuda.max_memory_allocated())
    /// ```
    ///
    /// Use instead (PyTorch/XLA):
    /// ```python
    /// xm.set_rng_state(seed)
    /// start = time.time()
    /// loss = train_step(batch)
    /// torch_xla.sync(wait=True)
    /// print(time.time() - start, xm.get_memory_info())
    /// ```
    /// With TorchTPU, `torch.tpu.manual_seed_all(seed)`, `torch.tpu.device_count()` and
    /// `torch.tpu.current_device()` mirror their CUDA names, and
    /// `torch.accelerator.max_memory_allocated()` reads the TPU's memory.
    ///
    /// ## Fix safety
    /// Fixes exist where the equivalent is documented: `synchronize()` →
    /// `torch_xla.sync(wait=True)` and `manual_seed(s)` → `xm.set_rng_state(s)` (PyTorch/XLA);
    /// `torch.cuda.{manual_seed, manual_seed_all, device_count, current_device}` →
    /// `torch.tpu.*` (TorchTPU). They add the import they need and are unsafe: the code no
    /// longer runs on GPUs.
    ///
    /// ## Known problems
    /// `torch.cuda.amp.*` is left to the precision rules. Harmless no-ops (`empty_cache()`) and
    /// `memory_stats()` (an empty dictionary) are not reported, nor the RNG-state round trip `get_rng_state_all()` /
    /// `set_rng_state_all(states)` (`[]` off CUDA, restored as `[]`), nor `device_count()` used
    /// in a comparison (`if torch.cuda.device_count() > 1:` asks whether GPUs exist) or as the
    /// bound of `for i in range(torch.cuda.device_count()):` (no iteration without CUDA), nor a
    /// count bound to a name its function only compares or bounds a `range` with
    /// (`n = torch.cuda.device_count()` … `if device >= n:`), nor a count that is the default or
    /// keyword value of a name for GPUs (`gpus=torch.cuda.device_count()`: 0 GPUs is right on a
    /// TPU VM). Calls after
    /// an early `if not torch.cuda.is_available(): return` (or `if hasattr(args, "tpu") and
    /// args.tpu: return`), on the right of
    /// `torch.cuda.is_available() and …`, or in a branch after one that handles a TPU
    /// (`if is_torch_xla_available(): … else: …`) are not reported, nor silent calls in a
    /// function that also handles the TPU itself (mentions `xla` / `torch.tpu`), nor the CUDA arm
    /// of a vendor dispatch: the `else` of an `if`/`elif` chain that probes only for other
    /// accelerators (`if is_torch_xpu_available(): … elif is_torch_npu_available(): … else:
    /// torch.cuda.manual_seed_all(seed)`), read as if under `torch.cuda.is_available()`. Such a
    /// chain without a TPU arm does send a TPU to its `else`, so an arm that calls a raising API
    /// (`torch.cuda.synchronize()`) is still reported.
    ///
    /// ## References
    /// - https://github.com/pytorch/xla/blob/v2.9.0/torch_xla/core/xla_model.py (`get_memory_info`,
    ///   `set_rng_state`), `torch_xla.sync(wait=True)`
    /// - TorchTPU `docs/notebooks/api_mapping.py` (https://github.com/google-pytorch/torch_tpu): `torch.cuda` → `torch.tpu`
    pub(crate) static CUDA_ONLY_API = {
        code: "TPU404",
        name: "cuda-only-api",
        severity: Error,
        fix: Sometimes,
        kinds: ["call"],
        tokens: ["cuda"],
        calls: torch_api::CUDA_RAISING_OR_SILENT,
        check: check,
    }
}

/// TPU404
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    if function.is_not(kind::ATTRIBUTE) {
        return;
    }
    let Some(qualified) = context.qualified_name(function) else {
        return;
    };
    let Some(name) = qualified.strip_prefix("torch.cuda.") else {
        return;
    };
    let raises = torch_api::CUDA_RAISING.contains(&name);
    let reads_zero = torch_api::CUDA_READS_ZERO.contains(&name);
    if !raises && !reads_zero && !torch_api::CUDA_SILENT.contains(&name) {
        return;
    }
    if tpu_api::guarded_by_cuda_check(context, call) {
        return;
    }
    // `if torch.cuda.device_count() > 1:` / `skipUnless(...device_count() > 1)` asks whether GPUs
    // exist, like `is_available()`.
    // So does a count bound to a name that is only compared (`n = torch.cuda.device_count()` …
    // `if device >= n:`).
    if name == "device_count"
        && (in_comparison(context, call)
            || bounds_for_loop(context, call)
            || counts_named_gpus(context, call)
            || context.semantic().count_only_compared(call))
    {
        return;
    }
    // A silent call next to the TPU's own handling (`torch.cuda.manual_seed_all(s)` followed by
    // `if is_torch_xla_available(): xm.set_rng_state(s)`) is harmless on a TPU.
    // (A memory reading still reads 0 next to TPU code: `xm.master_print(peak)` is no handling.)
    if !raises && !reads_zero && scope_handles_tpu(context, call) {
        return;
    }
    let backend = context.backend();
    let (equivalent, fix) = equivalent(context, name, function, arguments, backend);
    let message = if raises {
        format!("`torch.cuda.{name}()` raises without CUDA{equivalent}")
    } else if reads_zero {
        format!("`torch.cuda.{name}()` reads 0 on a TPU{equivalent}")
    } else {
        format!("`torch.cuda.{name}()` does nothing on a TPU{equivalent}")
    };
    // A memory reading of 0 misleads a log line and changes no result: information anywhere.
    let severity = if raises {
        Severity::Error
    } else if !reads_zero && context.hot_path().is_some() {
        Severity::Warning
    } else {
        Severity::Info
    };
    let diagnostic = context.report(function.start_byte()..call.end_byte(), message);
    diagnostic.severity = severity;
    diagnostic.fix = fix;
}

fn scope_handles_tpu<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let mut current = context.parent(call);
    while let Some(node) = current {
        if node.is(kind::FUNCTION_DEFINITION) {
            let text = context.text(node);
            return ["xla_available", "xm.", "torch.tpu.", "is_tpu"]
                .iter()
                .any(|word| text.contains(word));
        }
        current = context.parent(node);
    }
    false
}

/// Whether `call` is the whole value of a parameter default or a keyword argument whose name
/// names GPUs (`gpus=torch.cuda.device_count()`, `num_gpus: int = …`, `dict(gpu=…)`), or of a
/// dictionary entry keyed so (`{"trialGpuNumber": …}`): it asks how
/// many GPUs there are, and 0 is the right answer on a TPU VM (a resource request, not a world
/// size). A count in arithmetic (`rank % torch.cuda.device_count()`) or bound to a variable is
/// still reported.
fn counts_named_gpus<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let Some(parent) = context.parent(call) else {
        return false;
    };
    if parent.field("value").is_none_or(|v| v.id() != call.id()) {
        return false;
    }
    match parent.kind_key() {
        kind::KEYWORD_ARGUMENT | kind::DEFAULT_PARAMETER | kind::TYPED_DEFAULT_PARAMETER => parent
            .field("name")
            .is_some_and(|name| crate::semantic::names_cuda_hardware(context.text(name))),
        // `{"trialGpuNumber": torch.cuda.device_count()}`: a GPU count keyed by its name.
        kind::PAIR => parent
            .field("key")
            .and_then(|key| syntax::string_value(key, context.source()))
            .is_some_and(|key| crate::semantic::names_cuda_hardware(&key)),
        _ => false,
    }
}

fn in_comparison<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let mut current = context.parent(call);
    for _ in 0..3 {
        let Some(node) = current else { return false };
        if node.is_any(&[
            kind::COMPARISON_OPERATOR,
            kind::BOOLEAN_OPERATOR,
            kind::NOT_OPERATOR,
        ]) {
            return true;
        }
        current = context.parent(node);
    }
    false
}

/// Whether `call` is the bound of a `for` loop's `range(...)`
/// (`for i in range(torch.cuda.device_count()):`): without CUDA the loop runs no iteration, which
/// is the right count on a TPU machine (its body is CUDA-only scope already).
fn bounds_for_loop<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let Some(arguments) = context.parent(call).filter(|n| n.is(kind::ARGUMENT_LIST)) else {
        return false;
    };
    let Some(range) = context
        .parent(arguments)
        .filter(|n| n.is(kind::CALL))
        .filter(|n| {
            n.field("function")
                .is_some_and(|f| context.text_is(f, "range"))
        })
    else {
        return false;
    };
    context
        .parent(range)
        .filter(|n| n.is(kind::FOR_STATEMENT))
        .and_then(|f| f.field("right"))
        .is_some_and(|right| right.id() == range.id())
}

/// The backend's equivalent for the message (`"; use …"`) and, where documented, a fix.
fn equivalent(
    context: &Context<'_, '_>,
    name: &str,
    function: Node<'_>,
    arguments: Node<'_>,
    backend: Backend,
) -> (String, Option<Fix>) {
    match backend {
        Backend::TorchXla => match name {
            "synchronize" => {
                let sync = tpu_api::torch_xla_expression(context, function, "sync");
                let expression = sync.expression.clone();
                let mut edits = sync.edits();
                edits.push(Edit::replace(
                    function.start_byte()..arguments.end_byte(),
                    format!("{expression}(wait=True)"),
                ));
                (
                    format!("; use `{expression}(wait=True)`"),
                    Some(Fix::new(
                        Applicability::Unsafe.min(sync.applicability),
                        format!("Replace with `{expression}(wait=True)`"),
                        edits,
                    )),
                )
            }
            "manual_seed" | "manual_seed_all" | "seed" | "seed_all" => {
                let set_rng_state =
                    tpu_api::xla_model_expression(context, function, "set_rng_state");
                let expression = set_rng_state.expression.clone();
                let mut edits = set_rng_state.edits();
                if syntax::positional_args(arguments).len() != 1 || name.starts_with("seed") {
                    return (format!("; use `{expression}(seed)`"), None);
                }
                edits.push(Edit::replace(function.byte_range(), expression.clone()));
                (
                    format!("; use `{expression}(seed)`"),
                    Some(Fix::new(
                        Applicability::Unsafe.min(set_rng_state.applicability),
                        format!("Replace with `{expression}`"),
                        edits,
                    )),
                )
            }
            "mem_get_info" => ("; use `xm.get_memory_info()`".to_string(), None),
            name if torch_api::CUDA_READS_ZERO.contains(&name) => {
                ("; use `xm.get_memory_info()`".to_string(), None)
            }
            "device_count" => ("; use `torch_xla.runtime.world_size()`".to_string(), None),
            "set_device" | "current_device" => ("; use `torch_xla.device()`".to_string(), None),
            _ => (String::new(), None),
        },
        Backend::TorchTpu => match name {
            "manual_seed" | "manual_seed_all" | "device_count" | "current_device" => {
                let torch = Importer::new(context, function).member("torch", "tpu", None);
                let replacement = format!("{}.{name}", torch.expression);
                let mut edits = torch.edits();
                edits.push(Edit::replace(function.byte_range(), replacement.clone()));
                (
                    format!("; use `{replacement}()`"),
                    Some(Fix::new(
                        Applicability::Unsafe.min(torch.applicability),
                        format!("Replace with `{replacement}`"),
                        edits,
                    )),
                )
            }
            "set_device" => (
                "; `torch_tpu.api.tpu_device()` selects the device".to_string(),
                None,
            ),
            "current_stream" | "default_stream" | "set_stream" | "Stream" => {
                ("; TPU needs no streams".to_string(), None)
            }
            "mem_get_info" => ("; see `torch.tpu._hbm_usage_summary()`".to_string(), None),
            "memory_allocated" | "max_memory_allocated" | "reset_peak_memory_stats" => {
                (format!("; use `torch.accelerator.{name}()`"), None)
            }
            _ => (String::new(), None),
        },
        Backend::Unknown => (String::new(), None),
    }
}
