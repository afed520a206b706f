//! PyTorch/XLA: torch pairing, Python support, libtpu and its pin, the frozen release line.

use super::*;

pub(super) fn check(context: &mut Context<'_>, xla: &Distribution) {
    let table = context.table;
    let release = table.torch_xla_release(&xla.version).cloned();
    let xla_version = Version::parse(&xla.version);
    let xla_minor_text = xla_version
        .as_ref()
        .map(Version::major_minor_string)
        .unwrap_or_default();
    match context.dist("torch").cloned() {
        None => {
            let draft = context
                .draft(FindingId::TorchMissing)
                .var("backend", "torch_xla")
                .var("torch_minor", xla_minor_text.clone())
                .detail(format!(
                    "torch_xla {} needs torch, which is not installed.",
                    xla.version
                ));
            let draft = match &release {
                Some(release) => draft
                    .var("torch", release.torch.clone())
                    .var("torch_xla", release.version.clone())
                    .fix("xla-pair"),
                None => draft.fix("xla-minor"),
            };
            context.push(draft);
        }
        Some(torch) => {
            let torch_minor = major_minor(&torch.version);
            let xla_minor = major_minor(&xla.version);
            if torch_minor.is_some() && xla_minor.is_some() && torch_minor != xla_minor {
                let mut draft = context
                    .draft(FindingId::TorchXlaVersionMismatch)
                    .var("torch", torch.version.clone())
                    .var("torch_xla", xla.version.clone())
                    .var("torch_xla_minor", xla_minor_text.clone())
                    .detail(format!(
                        "torch_xla {} is built against torch {xla_minor_text}.x; torch {} is installed.",
                        xla.version, torch.version
                    ));
                draft = match &release {
                    Some(release) => draft
                        .var("release", release.version.clone())
                        .var("release_torch", release.torch.clone())
                        .fix("pair"),
                    None => draft.fix("minor"),
                };
                if let Some(matching) = table.torch_xla_for_torch(&torch.version)
                    && release.as_ref().map(|r| &r.version) != Some(&matching.version)
                {
                    draft = draft
                        .var("matching", matching.version.clone())
                        .fix("keep-torch");
                }
                context.push(draft);
            }
        }
    }
    match &release {
        Some(release)
            if !context.python_minor.is_empty()
                && !release.python.contains(&context.python_minor) =>
        {
            let mut draft = context
                .draft(FindingId::PythonUnsupportedByTorchXla)
                .var("torch_xla", release.version.clone())
                .var("python_minor", context.python_minor.clone())
                .var("release_torch", release.torch.clone())
                .var(
                    "venv_python",
                    release.python.last().cloned().unwrap_or_default(),
                )
                .detail(format!(
                    "TPU wheels of torch_xla {} exist for Python {}.",
                    release.version,
                    release.python.join(", ")
                ))
                .source(&release.source);
            if let Some(newer) = table.newest_torch_xla_for_python(&context.python_minor) {
                draft = draft
                    .var("newer", newer.version.clone())
                    .var("newer_torch", newer.torch.clone())
                    .fix("upgrade");
            }
            context.push(draft.fix("venv"));
        }
        Some(_) => {}
        None => {
            if xla_version
                .as_ref()
                .is_some_and(|version| !version.prerelease)
            {
                let draft = context
                    .draft(FindingId::TorchXlaUnknownRelease)
                    .var("torch_xla", xla.version.clone())
                    .detail(format!(
                        "The table (revision {}) knows torch_xla {} to {}.",
                        table.revision,
                        table
                            .torch_xla
                            .last()
                            .map(|r| r.version.as_str())
                            .unwrap_or("?"),
                        table.torch_xla[0].version
                    ));
                context.push(draft);
            }
        }
    }
    let last = &table.torch_xla_status.last_release;
    let draft = context
        .draft(FindingId::TorchXlaFrozen)
        .var("last_release", last.clone())
        .detail(format!(
            "torch_xla {} is installed; {last} is PyTorch/XLA's last release.",
            xla.version
        ))
        .fix("torch-tpu");
    context.push(draft);
    libtpu_for_torch_xla(context, xla, release.as_ref());
}

/// libtpu: from the `libtpu` package, bundled in a `+libtpu` torch_xla build, or (before 2.6)
/// from a real `libtpu-nightly`; and the version the release's `tpu` extra pins.
fn libtpu_for_torch_xla(
    context: &mut Context<'_>,
    xla: &Distribution,
    release: Option<&TorchXlaRelease>,
) {
    let table = context.table;
    let bundled = xla
        .files_sample
        .iter()
        .any(|file| file.ends_with("libtpu.so"));
    let legacy_real = context
        .dist(&table.rules.libtpu.legacy_package)
        .is_some_and(|dist| {
            dist.files_sample
                .iter()
                .any(|file| file.ends_with("libtpu.so"))
        });
    let libtpu = context.dist(&table.rules.libtpu.package).cloned();
    match libtpu {
        None if !bundled && !legacy_real => {
            let version = release.map_or(xla.version.as_str(), |r| r.version.as_str());
            let draft = context
                .draft(FindingId::LibtpuMissing)
                .var("torch_xla", version)
                .detail(format!(
                    "torch_xla {} is installed without its TPU runtime (the `libtpu` package).",
                    xla.version
                ))
                .fix("extra");
            context.push(draft);
        }
        Some(libtpu) => {
            if let Some(release) = release
                && let Some(pinned) = &release.libtpu
                && Version::parse(&libtpu.version)
                    .zip(Version::parse(pinned))
                    .is_some_and(|(installed, pinned)| !installed.cmp_release(&pinned).is_eq())
            {
                let draft = context
                    .draft(FindingId::TorchXlaLibtpuMismatch)
                    .var("libtpu", libtpu.version.clone())
                    .var("torch_xla", release.version.clone())
                    .var("pinned", pinned.clone())
                    .detail(format!(
                        "torch_xla {}[{}] pins libtpu=={pinned}; libtpu {} is installed.",
                        release.version, table.rules.libtpu.torch_xla_extra, libtpu.version
                    ))
                    .source(&release.source)
                    .fix("pin");
                context.push(draft);
            }
        }
        None => {}
    }
}
