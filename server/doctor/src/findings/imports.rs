//! Imports that fail, crash or hang, and the undefined symbols that identify a mismatched build.

use super::*;

pub(super) fn check(context: &mut Context<'_>) {
    let table = context.table;
    let modules: Vec<(String, ChildResult)> = context
        .probe
        .imports
        .iter()
        .map(|(module, result)| (module.clone(), result.clone()))
        .collect();
    for (module, result) in modules {
        let core = matches!(
            module.as_str(),
            "torch" | "torch_xla" | "torch_tpu" | "libtpu"
        );
        let gist = result.error.clone().unwrap_or_default();
        let with_tail = match &result.stderr_tail {
            Some(tail) if !tail.is_empty() => format!("{gist}\n{tail}"),
            _ => gist.clone(),
        };
        match result.status.as_str() {
            "failed" => {
                // Explained by the pairing check (`torch-tpu-torch-mismatch`) or a stub.
                if module == "torch_tpu" && torch_tpu_failure_explained(context, &result) {
                    continue;
                }
                let abi = match module.as_str() {
                    "torch_xla" => Some(FindingId::TorchXlaAbiMismatch),
                    "torchvision" => Some(FindingId::TorchvisionAbiMismatch),
                    "torchaudio" => Some(FindingId::TorchaudioAbiMismatch),
                    _ => None,
                };
                if let (Some(symbol), Some(id)) = (&result.undefined_symbol, abi) {
                    let mut draft = context.draft(id).detail(with_symbol(&gist, symbol));
                    if module == "torch_xla"
                        && let Some(xla) = context.dist("torch_xla")
                    {
                        draft = match table.torch_xla_release(&xla.version) {
                            Some(release) => draft
                                .var("torch", release.torch.clone())
                                .var("torch_xla", release.version.clone())
                                .fix("reinstall"),
                            None => draft
                                .var("torch_xla", xla.version.clone())
                                .fix("reinstall-unknown"),
                        };
                    }
                    let draft = draft.fix_if(context.probe.ld_library_path_set, "ld-library-path");
                    context.push(draft);
                    continue;
                }
                let draft = context
                    .draft(FindingId::ImportFailed)
                    .lowered_if(!core)
                    .var("module", module.clone())
                    .detail(with_tail)
                    .fix("reproduce");
                context.push(draft);
            }
            "timed_out" => {
                let draft = context
                    .draft(FindingId::ImportTimedOut)
                    .var("module", module.clone())
                    .detail(format!("{gist}."))
                    .fix("retry")
                    .fix("reproduce");
                context.push(draft);
            }
            "crashed" => {
                let draft = context
                    .draft(FindingId::ImportCrashed)
                    .lowered_if(!core)
                    .var("module", module.clone())
                    .detail(with_tail)
                    .fix("reproduce");
                context.push(draft);
            }
            _ => {}
        }
    }
}

/// A failing `import torch_tpu` that another finding already explains: the `0.0.0` stub, or the
/// torch mismatch symbol (reported by `torch-tpu-torch-mismatch`).
fn torch_tpu_failure_explained(context: &Context<'_>, result: &ChildResult) -> bool {
    let requirements = &context.table.torch_tpu;
    let stub = context
        .dist("torch_tpu")
        .is_some_and(|dist| requirements.build(&dist.version) == TorchTpuBuild::Stub);
    let mismatch = result
        .undefined_symbol
        .as_ref()
        .is_some_and(|symbol| symbol.contains(&requirements.torch_mismatch_symbol))
        && context.dist("torch").is_some();
    stub || (mismatch && context.backend.has_torch_tpu())
}
