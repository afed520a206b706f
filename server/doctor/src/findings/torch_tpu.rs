//! TorchTPU: its build (nightly, release branch, stub), the torch it was built against, libtpu,
//! Python, autoload and the multi-process launch variables.

use super::*;

pub(super) fn check(context: &mut Context<'_>, dist: &Distribution, google: bool) {
    let table = context.table;
    let requirements = &table.torch_tpu;
    let build = requirements.build(&dist.version);
    if build == TorchTpuBuild::Stub {
        let draft = context.draft(FindingId::TorchTpuStub).detail(format!(
            "torch_tpu {} at {} has no backend in it.",
            dist.version,
            dist.location.as_deref().unwrap_or("?")
        ));
        let draft = with_pairing(draft, table, context.pairing(), "torch").fix("reinstall");
        context.push(draft);
        return;
    }
    if !google {
        return;
    }
    if !context.python_minor.is_empty() && !requirements.python.contains(&context.python_minor) {
        let draft = context
            .draft(FindingId::TorchTpuPythonVersion)
            .var("supported", supported_range(&requirements.python))
            .var("python_minor", context.python_minor.clone())
            .var("venv_python", torch_tpu_venv_python(table))
            .detail(format!(
                "torch_tpu {} runs in Python {}.",
                dist.version, context.probe.python.version
            ));
        let draft = with_pairing(draft, table, context.pairing(), "torch").fix("venv");
        context.push(draft);
    }
    torch_for_torch_tpu(context, dist, &build);
    tpu_sync_torch(context, dist);
    libtpu_for_torch_tpu(context, dist);
    if context
        .probe
        .env
        .get("TORCH_DEVICE_BACKEND_AUTOLOAD")
        .is_some_and(|value| value.trim() == "0")
    {
        let draft = context
            .draft(FindingId::TorchTpuAutoloadDisabled)
            .detail("With autoloading off, `torch.device(\"tpu\")` only works after `import torch_tpu`.")
            .fix("unset");
        context.push(draft);
    }
    distributed(context);
}

/// `3.11-3.14` for a contiguous list, else the list.
fn supported_range(pythons: &[String]) -> String {
    match (pythons.first(), pythons.last()) {
        (Some(first), Some(last)) if pythons.len() > 2 => format!("{first}-{last}"),
        _ => pythons.join(", "),
    }
}

/// The installed torch against the one the torch_tpu build needs: too old, a nightly built for
/// another torch, or the undefined `deleteNode` symbol that such a pairing fails with at import.
fn torch_for_torch_tpu(context: &mut Context<'_>, dist: &Distribution, build: &TorchTpuBuild) {
    let table = context.table;
    let requirements = &table.torch_tpu;
    let Some(torch) = context.dist("torch").cloned() else {
        let draft = context
            .draft(FindingId::TorchMissing)
            .var("backend", "torch_tpu")
            .detail(format!(
                "torch_tpu {} needs torch {}+.",
                dist.version, requirements.torch_min
            ));
        let draft = with_pairing(draft, table, context.pairing(), "torch").fix("torch-tpu");
        context.push(draft);
        return;
    };
    let installed = Version::parse(&torch.version);
    if let (Some(installed), Some(minimum)) = (&installed, Version::parse(&requirements.torch_min))
        && !installed.at_least(&minimum)
    {
        let draft = context
            .draft(FindingId::TorchTpuTorchTooOld)
            .var("torch", torch.version.clone())
            .var("torch_min", requirements.torch_min.clone())
            .detail(format!(
                "torch_tpu {} requires torch>={}.",
                dist.version, requirements.torch_min
            ));
        let draft = with_pairing(draft, table, context.pairing(), "torch_pairing").fix("pairing");
        context.push(draft);
        return;
    }
    let import = context.import("torch_tpu").cloned();
    let symbol = import
        .as_ref()
        .and_then(|result| result.undefined_symbol.clone())
        .filter(|symbol| symbol.contains(&requirements.torch_mismatch_symbol));
    let import_failed = import
        .as_ref()
        .is_some_and(|result| matches!(result.status.as_str(), "failed" | "crashed"));
    let built = requirements.nightly_torch(&dist.version);
    let predicted = built.filter(|range| major_minor(&range.torch) != major_minor(&torch.version));
    if symbol.is_none() && predicted.is_none() {
        return;
    }
    let mut detail = match (&symbol, build) {
        (Some(symbol), _) => {
            let gist = import
                .as_ref()
                .and_then(|result| result.error.clone())
                .unwrap_or_default();
            format!("`import torch_tpu` fails: {}.", with_symbol(&gist, symbol))
        }
        (None, _) => format!(
            "`import torch_tpu` {}.",
            if import_failed {
                "fails"
            } else {
                "still succeeds"
            }
        ),
    };
    detail.push_str(&format!(
        " Installed: torch {}, torch_tpu {} ({}).",
        torch.version,
        dist.version,
        build.describe()
    ));
    if let Some(range) = built {
        detail.push_str(&format!(
            " Nightlies of {}..{} were built against torch {}.",
            range.from, range.until, range.torch
        ));
    }
    let mut draft = context
        .draft(FindingId::TorchTpuTorchMismatch)
        .lowered_if(symbol.is_none() && !import_failed)
        .var("torch", torch.version.clone())
        .var("installed_torch_tpu", dist.version.clone())
        .detail(detail);
    if let Some(range) = built {
        draft = draft
            .var("built_torch", range.torch.clone())
            .source(&range.source)
            .fix("built-torch");
    }
    let pairing = context.pairing().cloned();
    if pairing
        .as_ref()
        .is_some_and(|pairing| pairing.torch_tpu != dist.version)
    {
        draft = with_pairing(draft, table, pairing.as_ref(), "torch_pairing").fix("pairing");
    }
    context.push(draft.fix("verify"));
}

fn libtpu_for_torch_tpu(context: &mut Context<'_>, dist: &Distribution) {
    let table = context.table;
    let requirements = &table.torch_tpu;
    let pairing = context.pairing().cloned();
    let Some(libtpu) = context.dist(&table.rules.libtpu.package).cloned() else {
        let draft = context
            .draft(FindingId::TorchTpuLibtpuMissing)
            .detail(format!(
                "torch_tpu {} is installed but the `libtpu` package is not.",
                dist.version
            ));
        let draft = with_pairing(draft, table, pairing.as_ref(), "torch_pairing").fix("install");
        context.push(draft);
        return;
    };
    let installed = Version::parse(&libtpu.version);
    if let (Some(installed), Some(minimum)) = (&installed, Version::parse(&requirements.libtpu_min))
        && !installed.at_least(&minimum)
    {
        let draft = context
            .draft(FindingId::TorchTpuLibtpuTooOld)
            .var("installed_libtpu", libtpu.version.clone())
            .var("libtpu_min", requirements.libtpu_min.clone())
            .detail(format!(
                "torch_tpu declares libtpu>={}.",
                requirements.libtpu_min
            ));
        let draft = with_pairing(draft, table, pairing.as_ref(), "torch_pairing").fix("install");
        context.push(draft);
        return;
    }
    for problem in &table.libtpu_problem {
        let same = Version::parse(&problem.version)
            .zip(installed.as_ref())
            .is_some_and(|(known, installed)| known.cmp_release(installed).is_eq());
        let python_applies =
            problem.python.is_empty() || problem.python.contains(&context.python_minor);
        if !same || !python_applies {
            continue;
        }
        let mut draft = context
            .draft(FindingId::LibtpuKnownProblem)
            .var("installed_libtpu", libtpu.version.clone())
            .detail(format!("{}.", problem.problem))
            .source(&problem.source);
        if pairing
            .as_ref()
            .is_some_and(|pairing| pairing.libtpu != libtpu.version)
        {
            draft = with_pairing(draft, table, pairing.as_ref(), "torch_pairing").fix("install");
        }
        context.push(draft);
    }
}

/// TorchTPU's multi-process prerequisites, when a launch is configured in the environment.
fn distributed(context: &mut Context<'_>) {
    let table = context.table;
    let spec = &table.torch_tpu_distributed;
    let env = &context.probe.env;
    let world_size = env
        .get(&spec.world_size)
        .and_then(|value| value.trim().parse::<usize>().ok());
    let addresses = env.get(&spec.slicebuilder_addresses);
    let topology = env.get(&spec.topology);
    let configured =
        world_size.is_some_and(|size| size > 1) || addresses.is_some() || topology.is_some();
    if !configured {
        return;
    }
    let mut problems = Vec::new();
    match world_size {
        None => problems.push(format!("{} is not set", spec.world_size)),
        Some(size) => match addresses {
            None => problems.push(format!("{} is not set", spec.slicebuilder_addresses)),
            Some(addresses) => {
                let count = addresses
                    .split(',')
                    .filter(|a| !a.trim().is_empty())
                    .count();
                if count != size {
                    problems.push(format!(
                        "{} lists {count} address{} for {}={size}",
                        spec.slicebuilder_addresses,
                        if count == 1 { "" } else { "es" },
                        spec.world_size
                    ));
                }
            }
        },
    }
    if topology.is_none() {
        problems.push(format!("{} is not set", spec.topology));
    }
    // Inside a torchrun worker (RANK set) every torchrun variable must be there.
    if env.contains_key("RANK") {
        let missing: Vec<&str> = spec
            .torchrun
            .iter()
            .filter(|name| !env.contains_key(name.as_str()))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            problems.push(format!("{} not set", missing.join(", ")));
        }
    }
    if problems.is_empty() {
        return;
    }
    let shown: Vec<String> = std::iter::once(&spec.world_size)
        .chain([&spec.slicebuilder_addresses, &spec.topology])
        .chain(spec.torchrun.iter())
        .filter_map(|name| env.get(name).map(|value| format!("{name}={value}")))
        .collect();
    let draft = context
        .draft(FindingId::TorchTpuDistributedEnv)
        .var("problem", problems.join("; "))
        .var("wrapper", spec.wrapper.clone())
        .detail(if shown.is_empty() {
            "None of the launch variables is set.".to_string()
        } else {
            format!("Set: {}.", shown.join(" "))
        })
        .fix("wrapper");
    context.push(draft);
}

/// tpu-sync-torch against the torch_tpu it was built for, where a validated pairing records it.
fn tpu_sync_torch(context: &mut Context<'_>, dist: &Distribution) {
    let table = context.table;
    let Some(sync) = context.dist("tpu-sync-torch").cloned() else {
        return;
    };
    let pairings = &table.torch_tpu.pairing;
    // The one recorded for the installed torch_tpu, and the torch_tpu the installed one is for.
    let for_installed = pairings
        .iter()
        .find(|pairing| pairing.torch_tpu == dist.version && pairing.tpu_sync_torch.is_some());
    let built_for = pairings
        .iter()
        .find(|pairing| pairing.tpu_sync_torch.as_deref() == Some(sync.version.as_str()));
    let mismatched = match (for_installed, built_for) {
        (Some(pairing), _) => pairing.tpu_sync_torch.as_deref() != Some(sync.version.as_str()),
        (None, Some(pairing)) => pairing.torch_tpu != dist.version,
        (None, None) => false,
    };
    if !mismatched {
        return;
    }
    let mut draft = context
        .draft(FindingId::TpuSyncTorchMismatch)
        .var("tpu_sync_torch", sync.version.clone())
        .var("installed_torch_tpu", dist.version.clone())
        .var("torch_tpu_index", table.torch_tpu.index_url.clone())
        .detail(format!(
            "tpu-sync-torch {} and torch_tpu {} are installed.",
            sync.version, dist.version
        ));
    if let Some(pairing) = for_installed
        && let Some(wanted) = &pairing.tpu_sync_torch
    {
        draft = draft
            .var("wanted", wanted.clone())
            .source(&pairing.source)
            .fix("pair");
    }
    if let Some(pairing) = built_for {
        draft = with_pairing(draft, table, Some(pairing), "torch").fix("both");
    }
    context.push(draft);
}
