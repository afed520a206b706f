//! Turns probe and device facts into findings. Which finding applies is decided here; its title,
//! why, fix templates and sources are declared in `data/findings.toml` (see `catalog`), and every
//! version a fix installs comes from the compatibility table.

use std::path::Path;

use crate::catalog::{Draft, FindingId};
use crate::compat::{Compatibility, TorchTpuBuild, TorchTpuPairing, TorchXlaRelease, env_matches};
use crate::devices::{DeviceFacts, Holder, NodeKind};
use crate::probe::{ChildResult, Distribution, ProbeReport};
use crate::report::{Finding, Origin};
use crate::version::{Version, major_minor};

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Which TPU backend the environment has (what device findings speak of).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    TorchXla,
    TorchTpu,
    Both,
    None,
}

impl Backend {
    fn has_torch_tpu(self) -> bool {
        matches!(self, Self::TorchTpu | Self::Both)
    }
    fn has_torch_xla(self) -> bool {
        matches!(self, Self::TorchXla | Self::Both)
    }
}

struct Context<'a> {
    table: &'a Compatibility,
    /// Shell-quoted interpreter path.
    python: String,
    probe: &'a ProbeReport,
    /// `"3.11"`.
    python_minor: String,
    backend: Backend,
    findings: Vec<Finding>,
}

impl Context<'_> {
    fn dist(&self, name: &str) -> Option<&Distribution> {
        self.probe
            .distributions
            .get(name)
            .filter(|dist| dist.error.is_none())
    }

    fn import(&self, module: &str) -> Option<&ChildResult> {
        self.probe.imports.get(module)
    }

    /// A draft with `{python}` set.
    fn draft(&self, id: FindingId) -> Draft {
        Draft::new(id).var("python", self.python.clone())
    }

    fn push(&mut self, draft: Draft) {
        self.findings.push(draft.build());
    }

    /// The validated TorchTPU pairing for the installed torch (else the newest).
    fn pairing(&self) -> Option<&TorchTpuPairing> {
        self.table
            .torch_tpu
            .pairing_for_torch(self.dist("torch").map(|torch| torch.version.as_str()))
    }
}

/// Sets the variables of a TorchTPU install command: `{torch_tpu_index}`, `{torch_tpu}`,
/// `{libtpu}` and the pairing's torch as `torch_var`.
fn with_pairing(
    draft: Draft,
    table: &Compatibility,
    pairing: Option<&TorchTpuPairing>,
    torch_var: &'static str,
) -> Draft {
    let draft = draft.var("torch_tpu_index", table.torch_tpu.index_url.clone());
    match pairing {
        Some(pairing) => draft
            .var(torch_var, pairing.torch.clone())
            .var("torch_tpu", pairing.torch_tpu.clone())
            .var("libtpu", pairing.libtpu.clone())
            .source(&pairing.source),
        None => draft,
    }
}

/// Sets `{torch_xla}`, `{xla_torch}` (and `{xla_python}`) for installing a torch_xla release.
fn with_xla_release(draft: Draft, release: &TorchXlaRelease) -> Draft {
    draft
        .var("torch_xla", release.version.clone())
        .var("xla_torch", release.torch.clone())
        .var(
            "xla_python",
            release.python.last().cloned().unwrap_or_default(),
        )
        .source(&release.source)
}

/// Classifies the installed `torch_tpu` distribution.
pub fn torch_tpu_origin(
    table: &Compatibility,
    dist: &Distribution,
    import: Option<&ChildResult>,
) -> Origin {
    let text = [
        dist.summary.as_deref(),
        dist.home_page.as_deref(),
        dist.author.as_deref(),
        dist.author_email.as_deref(),
    ]
    .into_iter()
    .flatten()
    .chain(dist.project_urls.iter().map(String::as_str))
    .collect::<Vec<_>>()
    .join(" ")
    .to_ascii_lowercase();
    let sophgo_marker = table
        .sophgo
        .markers
        .iter()
        .any(|marker| text.contains(&marker.to_ascii_lowercase()));
    let sophgo_file = dist
        .files_sample
        .iter()
        .any(|file| table.sophgo.files.contains(file));
    if sophgo_marker || sophgo_file {
        return Origin::Sophgo;
    }
    let google_file = dist
        .files_sample
        .iter()
        .any(|file| file.starts_with("torch_tpu/_internal/"));
    let needs_libtpu = dist
        .requires
        .iter()
        .any(|requirement| requirement_name(requirement) == "libtpu");
    let imported_internal = import.and_then(|result| result.has_internal) == Some(true);
    if google_file || needs_libtpu || imported_internal {
        Origin::Google
    } else {
        Origin::Unknown
    }
}

fn requirement_name(requirement: &str) -> String {
    requirement
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
        .replace('_', "-")
}

/// The backend a probe report shows: torch_xla, and any `torch_tpu` that is not Sophgo's (a
/// TorchTPU whose import fails, or its `0.0.0` stub, is still the backend the user installed).
pub fn backend_of(table: &Compatibility, probe: &ProbeReport) -> Backend {
    let installed = |name: &str| {
        probe
            .distributions
            .get(name)
            .filter(|dist| dist.error.is_none())
    };
    let xla = installed("torch_xla").is_some();
    let tpu = installed("torch_tpu").is_some_and(|dist| {
        torch_tpu_origin(table, dist, probe.imports.get("torch_tpu")) != Origin::Sophgo
    });
    match (xla, tpu) {
        (true, true) => Backend::Both,
        (true, false) => Backend::TorchXla,
        (false, true) => Backend::TorchTpu,
        (false, false) => Backend::None,
    }
}

/// All findings for a probe report.
pub fn analyze(
    table: &Compatibility,
    python_path: &Path,
    probe: &ProbeReport,
    devices: &DeviceFacts,
    euid: u32,
) -> Vec<Finding> {
    let python_minor = major_minor(&probe.python.version)
        .map(|(major, minor)| format!("{major}.{minor}"))
        .unwrap_or_default();
    let mut context = Context {
        table,
        python: shell_quote(&python_path.to_string_lossy()),
        probe,
        python_minor,
        backend: backend_of(table, probe),
        findings: Vec::new(),
    };
    interpreter(&mut context);
    backends(&mut context);
    companions(&mut context);
    known_bad(&mut context);
    imports(&mut context);
    environment(&mut context);
    let backend = context.backend;
    device_only_findings(table, devices, euid, backend, &mut context.findings);
    allocation(&mut context);
    context.findings
}

fn interpreter(context: &mut Context<'_>) {
    let table = context.table;
    if !context.probe.metadata_available {
        let newest = &table.torch_xla[0];
        let draft = context
            .draft(FindingId::PythonTooOld)
            .var("python_version", context.probe.python.version.clone())
            .var(
                "venv_python",
                table.torch_tpu.python.first().cloned().unwrap_or_default(),
            )
            .detail("`importlib.metadata` is missing (Python 3.8 or newer has it), so installed packages cannot be listed.");
        let draft = with_pairing(draft, table, table.torch_tpu.pairing.first(), "torch");
        let draft = with_xla_release(draft, newest)
            .fix("venv-torch-tpu")
            .fix("venv-torch-xla");
        context.push(draft);
    }
    if !context.probe.python.in_virtualenv {
        let draft = context
            .draft(FindingId::SystemInterpreter)
            .detail(format!(
                "{} is a system interpreter (prefix {}).",
                context.probe.python.executable, context.probe.python.prefix
            ))
            .fix("create");
        context.push(draft);
    }
}

fn backends(context: &mut Context<'_>) {
    let table = context.table;
    let torch_xla = context.dist("torch_xla").cloned();
    let torch_tpu = context.dist("torch_tpu").cloned();
    let origin = torch_tpu
        .as_ref()
        .map(|dist| torch_tpu_origin(table, dist, context.import("torch_tpu")));

    if let (Some(dist), Some(origin)) = (&torch_tpu, origin) {
        match origin {
            Origin::Sophgo => {
                let draft = context
                    .draft(FindingId::SophgoTorchTpu)
                    .lowered_if(torch_xla.is_some())
                    .detail(format!(
                        "torch_tpu {} (author: {}, home page: {}) is the PyTorch backend for Sophgo chips; it uses the same import name and device string \"tpu\".",
                        dist.version,
                        dist.author.as_deref().or(dist.author_email.as_deref()).unwrap_or("?"),
                        dist.home_page.as_deref().unwrap_or("?"),
                    ))
                    .source(&table.sophgo.source);
                let draft = with_pairing(draft, table, context.pairing(), "torch").fix("replace");
                context.push(draft);
            }
            Origin::Unknown if table.torch_tpu.build(&dist.version) != TorchTpuBuild::Stub => {
                let draft = context
                    .draft(FindingId::TorchTpuUnknownOrigin)
                    .var("torch_tpu", dist.version.clone())
                    .detail(format!(
                        "torch_tpu {} has neither TorchTPU's internals (`torch_tpu._internal`) nor Sophgo's markers.",
                        dist.version
                    ))
                    .fix("show");
                context.push(draft);
            }
            Origin::Unknown | Origin::Google => {}
        }
    }

    if context.backend == Backend::None {
        no_backend(context);
    }
    if let Some(dist) = &torch_xla {
        check_torch_xla(context, dist);
    }
    if context.backend.has_torch_tpu()
        && let Some(dist) = &torch_tpu
    {
        check_torch_tpu(context, dist, origin == Some(Origin::Google));
    }
    if context.backend == Backend::Both
        && origin == Some(Origin::Google)
        && let Some(xla) = &torch_xla
    {
        let draft = context
            .draft(FindingId::TwoTpuBackends)
            .detail(format!(
                "torch_xla {} and torch_tpu {} share this environment.",
                xla.version,
                torch_tpu
                    .as_ref()
                    .map(|d| d.version.as_str())
                    .unwrap_or("?")
            ))
            .fix("uninstall-xla");
        context.push(draft);
    }
}

fn no_backend(context: &mut Context<'_>) {
    let table = context.table;
    let torch_tpu_python = table.torch_tpu.python.contains(&context.python_minor);
    let draft = context
        .draft(FindingId::NoTpuBackend)
        .var(
            "venv_python",
            // The Python vLLM-TorchTPU also needs, when TorchTPU supports it.
            table
                .vllm_torchtpu
                .python
                .iter()
                .find(|python| table.torch_tpu.python.contains(python))
                .cloned()
                .unwrap_or_else(|| table.torch_tpu.python[0].clone()),
        )
        .detail(match context.dist("torch") {
            Some(torch) => format!(
                "torch {} is installed, but neither TorchTPU (torch_tpu) nor torch_xla.",
                torch.version
            ),
            None => "Neither torch, TorchTPU (torch_tpu) nor torch_xla is installed.".to_string(),
        })
        .source(&table.torch_tpu.source);
    let draft = with_pairing(draft, table, context.pairing(), "torch").fix(if torch_tpu_python {
        "torch-tpu"
    } else {
        "venv-torch-tpu"
    });
    let draft = match table.newest_torch_xla_for_python(&context.python_minor) {
        Some(release) => with_xla_release(draft, release).fix("torch-xla"),
        None => with_xla_release(draft, &table.torch_xla[0]).fix("venv-torch-xla"),
    };
    context.push(draft);
}

fn check_torch_xla(context: &mut Context<'_>, xla: &Distribution) {
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
                ))
                .source(&table.rules.torch_xla_pairing.source);
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
                    ))
                    .source(&table.rules.torch_xla_pairing.source);
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
        .source(&table.torch_xla_status.source)
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
                .source(&table.rules.libtpu.source)
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

fn check_torch_tpu(context: &mut Context<'_>, dist: &Distribution, google: bool) {
    let table = context.table;
    let requirements = &table.torch_tpu;
    let build = requirements.build(&dist.version);
    if build == TorchTpuBuild::Stub {
        let draft = context
            .draft(FindingId::TorchTpuStub)
            .detail(format!(
                "torch_tpu {} at {} has no backend in it.",
                dist.version,
                dist.location.as_deref().unwrap_or("?")
            ))
            .source(&requirements.source);
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
            .var(
                "venv_python",
                requirements.python.last().cloned().unwrap_or_default(),
            )
            .detail(format!(
                "torch_tpu {} runs in Python {}.",
                dist.version, context.probe.python.version
            ))
            .source(&requirements.source);
        let draft = with_pairing(draft, table, context.pairing(), "torch").fix("venv");
        context.push(draft);
    }
    torch_for_torch_tpu(context, dist, &build);
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
            ))
            .source(&requirements.source);
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
            ))
            .source(&requirements.source);
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
        (Some(symbol), _) => format!(
            "`import torch_tpu` fails: {} (symbol {symbol}).",
            import
                .as_ref()
                .and_then(|result| result.error.clone())
                .unwrap_or_default()
        ),
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
            ))
            .source(&requirements.source);
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
            ))
            .source(&requirements.source);
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
        .source(&spec.source)
        .fix("wrapper");
    context.push(draft);
}

/// libtpu-nightly leftovers, torchvision / torchaudio pairing, transformers' changed gate.
fn companions(context: &mut Context<'_>) {
    let table = context.table;
    let legacy = &table.rules.libtpu.legacy_package;
    if let Some(nightly) = context.dist(legacy).cloned()
        && let Some(libtpu) = context.dist(&table.rules.libtpu.package).cloned()
    {
        let draft = context
            .draft(FindingId::LibtpuNightlyConflict)
            .var("libtpu", libtpu.version.clone())
            .detail(format!(
                "libtpu {} and libtpu-nightly {} both install the `libtpu` module.",
                libtpu.version, nightly.version
            ))
            .source(&table.rules.libtpu.source)
            .fix("remove");
        context.push(draft);
    }
    if context.backend == Backend::TorchXla
        && let Some(transformers) = context.dist(&table.transformers_gate.distribution).cloned()
    {
        let draft = context
            .draft(FindingId::TransformersTpuGate)
            .var("transformers", transformers.version.clone())
            .detail(format!(
                "transformers {} is installed with torch_xla and without TorchTPU.",
                transformers.version
            ))
            .source(&table.transformers_gate.source)
            .fix("grep");
        context.push(draft);
    }
    for package in &table.vllm_torchtpu.distributions {
        if context.dist(package).is_some()
            && !context.python_minor.is_empty()
            && !table.vllm_torchtpu.python.contains(&context.python_minor)
        {
            let draft = context
                .draft(FindingId::VllmTorchTpuPython)
                .var("package", package.clone())
                .var("supported", table.vllm_torchtpu.python.join(", "))
                .var("python_minor", context.python_minor.clone())
                .var("venv_python", table.vllm_torchtpu.python[0].clone())
                .var("torch_tpu_index", table.torch_tpu.index_url.clone())
                .detail(format!(
                    "{package} is installed in Python {}.",
                    context.probe.python.version
                ))
                .source(&table.vllm_torchtpu.source)
                .fix("venv");
            context.push(draft);
        }
    }
    let Some(torch) = context.dist("torch").cloned() else {
        return;
    };
    if let Some(vision) = context.dist("torchvision").cloned()
        && let Some(pair) = table.torchvision_for_torch(&torch.version)
        && major_minor(&vision.version) != major_minor(&pair.torchvision)
    {
        let draft = context
            .draft(FindingId::TorchvisionMismatch)
            .var("torchvision", vision.version.clone())
            .var("torch", torch.version.clone())
            .var("wanted", pair.torchvision.clone())
            .detail(format!(
                "torch {} pairs with torchvision {}.",
                pair.torch, pair.torchvision
            ))
            .source(&pair.source)
            .fix("install");
        context.push(draft);
    }
    if let Some(audio) = context.dist("torchaudio").cloned()
        && let (Some(torch_minor), Some(audio_minor), Some(since)) = (
            major_minor(&torch.version),
            major_minor(&audio.version),
            major_minor(&table.torchaudio.same_minor_as_torch_since),
        )
        && torch_minor >= since
        && audio_minor != torch_minor
    {
        let draft = context
            .draft(FindingId::TorchaudioMismatch)
            .var("torchaudio", audio.version.clone())
            .var("torch", torch.version.clone())
            .var("wanted", format!("{}.{}", torch_minor.0, torch_minor.1))
            .detail("torchaudio releases share torch's major.minor version.")
            .source(&table.torchaudio.source)
            .fix("install");
        context.push(draft);
    }
}

fn known_bad(context: &mut Context<'_>) {
    let table = context.table;
    for entry in &table.known_bad {
        let Some(id) = FindingId::from_id(&entry.id) else {
            continue;
        };
        if !entry
            .installed
            .iter()
            .all(|name| context.dist(name).is_some())
        {
            continue;
        }
        let detail = entry
            .installed
            .iter()
            .filter_map(|name| {
                context
                    .dist(name)
                    .map(|d| format!("{} {}", name, d.version))
            })
            .collect::<Vec<_>>()
            .join(", ");
        let draft = context
            .draft(id)
            .detail(format!("Installed: {detail}."))
            .source(&entry.source)
            .fix("replace");
        context.push(draft);
    }
}

fn imports(context: &mut Context<'_>) {
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
                    let mut draft = context
                        .draft(id)
                        .detail(format!("{gist} (symbol {symbol})"))
                        .source(&table.rules.torch_xla_pairing.source);
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

fn environment(context: &mut Context<'_>) {
    let table = context.table;
    let env = &context.probe.env;
    let backend = context.backend;
    let names_matching = |patterns: &[String]| -> Vec<String> {
        env.keys()
            .filter(|name| env_matches(patterns, name))
            .cloned()
            .collect()
    };
    if backend.has_torch_xla() {
        let expected = &table.rules.pjrt_device.expected;
        match env.get("PJRT_DEVICE") {
            None => {
                let draft = context
                    .draft(FindingId::PjrtDeviceUnset)
                    .var("expected", expected.clone())
                    .detail("torch_xla chooses its device itself when PJRT_DEVICE is unset.")
                    .source(&table.rules.pjrt_device.source)
                    .fix("export");
                context.push(draft);
            }
            Some(value) if !value.eq_ignore_ascii_case(expected) => {
                let draft = context
                    .draft(FindingId::PjrtDeviceNotTpu)
                    .var("expected", expected.clone())
                    .var("value", value.clone())
                    .detail(format!(
                        "PJRT_DEVICE selects torch_xla's device; it is `{value}`."
                    ))
                    .source(&table.rules.pjrt_device.source)
                    .fix("export");
                context.push(draft);
            }
            Some(_) => {}
        }
        let deprecated: Vec<&str> = ["XLA_USE_BF16", "XLA_DOWNCAST_BF16"]
            .into_iter()
            .filter(|name| env.contains_key(*name))
            .collect();
        if !deprecated.is_empty() {
            let draft = context
                .draft(FindingId::XlaBf16EnvDeprecated)
                .var("names", deprecated.join(" "))
                .detail(
                    deprecated
                        .iter()
                        .map(|name| format!("{name}={}", env[*name]))
                        .collect::<Vec<_>>()
                        .join(" "),
                )
                .fix("unset");
            context.push(draft);
        }
    }
    let other = match backend {
        Backend::TorchTpu => Some((&table.backend_env.torch_xla_only, "torch_xla", "TorchTPU")),
        Backend::TorchXla => Some((&table.backend_env.torch_tpu_only, "TorchTPU", "torch_xla")),
        Backend::Both | Backend::None => None,
    };
    if let Some((patterns, reader, installed)) = other {
        let names = names_matching(patterns);
        if !names.is_empty() {
            let draft = context
                .draft(FindingId::EnvForOtherBackend)
                .var("names", names.join(" "))
                .var("reader", reader)
                .var("backend", installed)
                .detail(
                    names
                        .iter()
                        .map(|name| format!("{name}={}", env[name]))
                        .collect::<Vec<_>>()
                        .join(" "),
                )
                .source(&table.backend_env.source)
                .fix("unset");
            context.push(draft);
        }
    }
    if backend.has_torch_tpu() {
        let names = names_matching(&table.backend_env.torch_tpu_read_at_init);
        if !names.is_empty() {
            let autoload_off = env
                .get("TORCH_DEVICE_BACKEND_AUTOLOAD")
                .is_some_and(|value| value.trim() == "0");
            let draft = context
                .draft(FindingId::EnvReadAtBackendInit)
                .var("names", names.join(", "))
                .detail(format!(
                    "Set here: {}. TorchTPU initialises {}.",
                    names
                        .iter()
                        .map(|name| format!("{name}={}", env[name]))
                        .collect::<Vec<_>>()
                        .join(" "),
                    if autoload_off {
                        "at `import torch_tpu` (autoload is off)"
                    } else {
                        "during `import torch` (autoload)"
                    }
                ))
                .source(&table.backend_env.source)
                .fix("restart");
            context.push(draft);
        }
    }
}

/// Device findings; also used when no interpreter could be probed (`backend` is then `None`).
pub fn device_only_findings(
    table: &Compatibility,
    devices: &DeviceFacts,
    euid: u32,
    backend: Backend,
    findings: &mut Vec<Finding>,
) {
    let source = &table.rules.devices.source;
    if devices.nodes.is_empty() {
        if devices.pci_chips.is_empty() {
            let consequence = match backend {
                Backend::TorchTpu => {
                    " Here TorchTPU has no \"tpu\" device: `torch.device(\"tpu\")` fails."
                }
                Backend::TorchXla => {
                    " Here torch_xla falls back to PJRT_DEVICE=CPU and \"xla\" tensors live on the CPU."
                }
                Backend::Both => " Here neither backend has a TPU to use.",
                Backend::None => "",
            };
            findings.push(
                Draft::new(FindingId::NoTpuDevice)
                    .detail(format!(
                        "No /dev/accel* or /dev/vfio/<N> device nodes and no Google TPU on the PCI bus.{consequence}"
                    ))
                    .source(source)
                    .fix("tpu-vm")
                    .build(),
            );
        } else {
            let generations: Vec<String> = devices
                .pci_chips
                .iter()
                .map(|chip| format!("{} ({})", chip.generation, chip.address))
                .collect();
            findings.push(
                Draft::new(FindingId::TpuDeviceNodesMissing)
                    .var("count", devices.pci_chips.len().to_string())
                    .detail(format!(
                        "Chips: {}. No /dev/accel* or /dev/vfio/<N> is present.",
                        generations.join(", ")
                    ))
                    .source(source)
                    .fix("container")
                    .build(),
            );
        }
        return;
    }
    let denied: Vec<String> = devices
        .nodes
        .iter()
        .filter(|node| !node.accessible)
        .map(|node| node.path.display().to_string())
        .collect();
    if !denied.is_empty() {
        findings.push(
            Draft::new(FindingId::TpuDevicePermission)
                .var("nodes", denied.join(" "))
                .detail(format!(
                    "Not readable and writable by this user: {}.",
                    denied.join(", ")
                ))
                .source(source)
                .fix("inspect")
                .build(),
        );
    }
    // One finding per process, listing every node it holds.
    let mut pids: Vec<u32> = devices.holders.iter().map(|holder| holder.pid).collect();
    pids.dedup();
    for pid in pids {
        let held: Vec<&Holder> = devices
            .holders
            .iter()
            .filter(|holder| holder.pid == pid)
            .collect();
        findings.push(holder_finding(devices, &held, euid, source));
    }
    let nodes: Vec<String> = devices
        .nodes
        .iter()
        .map(|node| node.path.display().to_string())
        .collect();
    let unverified = devices.uninspectable_processes > 0 && euid != 0;
    if devices.holders.is_empty() && unverified {
        let lockfile = devices
            .libtpu_lockfile
            .as_ref()
            .map(|path| {
                format!(
                    " {} exists, so one of them may hold the TPU.",
                    path.display()
                )
            })
            .unwrap_or_default();
        findings.push(
            Draft::new(FindingId::DeviceHoldersUnknown)
                .var("nodes", nodes.join(" "))
                .detail(format!(
                    "{} processes belong to other users; only root can see their open files.{lockfile}",
                    devices.uninspectable_processes
                ))
                .fix("lsof")
                .build(),
        );
    }
    if let Some(lockfile) = &devices.libtpu_lockfile
        && devices.holders.is_empty()
        && !unverified
    {
        let others = devices
            .libtpu_lockfile_uid
            .is_some_and(|owner| owner != euid && euid != 0);
        findings.push(
            Draft::new(FindingId::StaleLibtpuLockfile)
                .var("lockfile", shell_quote(&lockfile.display().to_string()))
                .detail(format!(
                    "No process has {} open{}.",
                    nodes.join(", "),
                    match devices.libtpu_lockfile_uid {
                        Some(owner) => format!("; the lock file belongs to uid {owner}"),
                        None => String::new(),
                    }
                ))
                .source(&table.rules.libtpu.source)
                .fix(if others { "remove-as-root" } else { "remove" })
                .build(),
        );
    }
}

fn holder_finding(devices: &DeviceFacts, held: &[&Holder], euid: u32, source: &str) -> Finding {
    let first = held[0];
    let pid = first.pid;
    let paths: Vec<String> = held
        .iter()
        .map(|holder| holder.device.display().to_string())
        .collect();
    let vfio = held.iter().any(|holder| {
        devices
            .nodes
            .iter()
            .any(|node| node.path == holder.device && node.kind == NodeKind::Vfio)
    });
    let devices_text = if paths.len() == 1 {
        format!("{} is", paths[0])
    } else {
        format!("{} are", paths.join(", "))
    };
    let user = first
        .user
        .clone()
        .or_else(|| first.uid.map(|uid| format!("uid {uid}")))
        .unwrap_or_else(|| "an unknown user".to_string());
    let holder_text = if first.jupyter_kernel {
        format!("Jupyter kernel process {pid}")
    } else {
        format!("process {pid}")
    };
    let mut facts = vec![format!("user {user}")];
    if first.jupyter_kernel {
        facts.push("a Jupyter kernel".to_string());
    }
    let command = if first.cmdline.is_empty() {
        "command line not readable".to_string()
    } else {
        first.cmdline.clone()
    };
    let detail = format!(
        "pid {pid} ({}): {command}\nA new program fails with \"{}\".",
        facts.join(", "),
        if vfio {
            "Device or resource busy"
        } else {
            "The TPU is already in use by process with pid ..."
        }
    );
    let other_user = first.uid.is_some_and(|uid| uid != euid) && euid != 0;
    let fix = if first.jupyter_kernel {
        "kernel"
    } else if other_user {
        "kill-other-user"
    } else {
        "kill"
    };
    let mut draft = Draft::new(FindingId::TpuDeviceBusy)
        .var("devices", devices_text)
        .var("holder", holder_text)
        .var("pid", pid.to_string())
        .var("user", user)
        .detail(detail)
        .source(source)
        .fix(fix);
    if first.jupyter_kernel && other_user {
        draft = draft.fix("kill-other-user");
    }
    draft.build()
}

fn allocation(context: &mut Context<'_>) {
    let results = context.probe.allocation.clone();
    for result in results {
        let backend = result.backend.clone().unwrap_or_default();
        let device = if backend == "torch_xla" { "xla" } else { "tpu" };
        let snippet = allocation_snippet(&backend);
        let gist = result.error.clone().unwrap_or_default();
        let detail = match &result.stderr_tail {
            Some(tail) if !tail.is_empty() => format!("{gist}\n{tail}"),
            _ => gist,
        };
        let id = match result.status.as_str() {
            "ok" => match landed_off_tpu(&backend, &result) {
                Some(landed) => {
                    let draft = context
                        .draft(FindingId::TpuAllocationNotOnTpu)
                        .var("device", device)
                        .var("landed", landed.clone())
                        .var("snippet", shell_quote(snippet))
                        .detail(format!(
                            "The product of two 2×2 tensors created on \"{device}\" is on {landed}{}.",
                            if backend == "torch_xla" && !context.probe.env.contains_key("PJRT_DEVICE") {
                                " (PJRT_DEVICE is unset)"
                            } else {
                                ""
                            }
                        ))
                        .fix("reproduce");
                    context.push(draft);
                    continue;
                }
                None => continue,
            },
            "timed_out" => FindingId::TpuAllocationTimedOut,
            _ => FindingId::TpuAllocationFailed,
        };
        let draft = context
            .draft(id)
            .var("device", device)
            .var("snippet", shell_quote(snippet))
            .detail(detail)
            .fix("reproduce");
        context.push(draft);
    }
}

/// The snippet that reproduces the allocation check, printing where the product landed.
pub fn allocation_snippet(backend: &str) -> &'static str {
    if backend == "torch_xla" {
        "import torch, torch_xla, torch_xla.runtime as xr; p = torch.ones(2, 2, device=\"xla\") @ torch.ones(2, 2, device=\"xla\"); print(p.device, xr.device_type(), p.cpu())"
    } else {
        "import torch; p = torch.ones(2, 2, device=\"tpu\") @ torch.ones(2, 2, device=\"tpu\"); print(p.device, p.cpu())"
    }
}

/// Where a successful allocation landed when that is not a TPU (`None` when it is one).
pub fn landed_off_tpu(backend: &str, result: &ChildResult) -> Option<String> {
    let device = result
        .device
        .clone()
        .unwrap_or_else(|| "an unknown device".to_string());
    let kind = result.device_kind.as_deref().unwrap_or("");
    if backend == "torch_xla" {
        let hardware = result.hardware.as_deref();
        match (kind, hardware) {
            ("xla", Some(hardware)) if hardware.eq_ignore_ascii_case("TPU") => None,
            ("xla", Some(hardware)) => Some(format!("{device} backed by {hardware}")),
            ("xla", None) => Some(format!("{device} whose device type is unknown")),
            _ => Some(device),
        }
    } else if kind == "tpu" {
        None
    } else {
        Some(device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_when_needed() {
        assert_eq!(shell_quote("/usr/bin/python3"), "/usr/bin/python3");
        assert_eq!(
            shell_quote("/home/me/my env/python"),
            "'/home/me/my env/python'"
        );
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn requirement_names() {
        assert_eq!(requirement_name("libtpu>=0.0.38"), "libtpu");
        assert_eq!(requirement_name("torch_xla[tpu]==2.8.0"), "torch-xla");
    }

    fn facts_with_one_node() -> DeviceFacts {
        DeviceFacts {
            nodes: vec![crate::devices::DeviceNode {
                path: "/dev/accel0".into(),
                kind: NodeKind::Accel,
                accessible: true,
            }],
            ..DeviceFacts::default()
        }
    }

    fn device_ids(devices: &DeviceFacts, euid: u32) -> Vec<Finding> {
        let mut findings = Vec::new();
        let table = crate::compat::compatibility();
        device_only_findings(table, devices, euid, Backend::TorchTpu, &mut findings);
        findings
    }

    /// As a normal user, other users' processes cannot be inspected: a lock file is then not
    /// known to be stale, and the report says how to check.
    #[test]
    fn lock_file_is_stale_only_when_every_process_was_inspected() {
        let mut devices = facts_with_one_node();
        devices.libtpu_lockfile = Some("/tmp/libtpu_lockfile".into());
        devices.libtpu_lockfile_uid = Some(1001);
        devices.uninspectable_processes = 3;
        let findings = device_ids(&devices, 1000);
        assert_eq!(findings.len(), 1, "{findings:#?}");
        assert_eq!(findings[0].id, "device-holders-unknown");
        assert!(findings[0].detail.contains("/tmp/libtpu_lockfile exists"));
        assert_eq!(
            findings[0].fixes[0].commands,
            vec!["sudo lsof -w /dev/accel0"]
        );

        // Every process inspected: stale, and owned by another user, so removed as root.
        devices.uninspectable_processes = 0;
        let findings = device_ids(&devices, 1000);
        assert_eq!(findings[0].id, "stale-libtpu-lockfile");
        assert_eq!(
            findings[0].fixes[0].commands,
            vec!["sudo rm -f /tmp/libtpu_lockfile"]
        );
        // Root sees everything and removes it directly.
        devices.uninspectable_processes = 3;
        let findings = device_ids(&devices, 0);
        assert_eq!(
            findings[0].fixes[0].commands,
            vec!["rm -f /tmp/libtpu_lockfile"]
        );
    }

    #[test]
    fn another_users_process_is_stopped_as_root() {
        let mut devices = facts_with_one_node();
        devices.libtpu_lockfile = Some("/tmp/libtpu_lockfile".into());
        devices.holders.push(Holder {
            pid: 4242,
            device: "/dev/accel0".into(),
            cmdline: String::new(),
            uid: Some(1001),
            user: Some("alice".to_string()),
            jupyter_kernel: false,
        });
        let findings = device_ids(&devices, 1000);
        assert_eq!(findings.len(), 1, "{findings:#?}");
        let busy = &findings[0];
        assert_eq!(busy.title, "/dev/accel0 is held by process 4242");
        assert!(
            busy.detail
                .starts_with("pid 4242 (user alice): command line not readable")
        );
        assert_eq!(
            busy.fixes[0].description,
            "Process 4242 belongs to alice: ask them, or stop it as root"
        );
        assert_eq!(busy.fixes[0].commands, vec!["sudo kill 4242"]);
    }

    #[test]
    fn allocation_must_land_on_a_tpu() {
        let result = |device: &str, kind: &str, hardware: Option<&str>| ChildResult {
            device: Some(device.to_string()),
            device_kind: Some(kind.to_string()),
            hardware: hardware.map(str::to_string),
            ..ChildResult::default()
        };
        assert_eq!(
            landed_off_tpu("torch_xla", &result("xla:0", "xla", Some("TPU"))),
            None
        );
        assert_eq!(
            landed_off_tpu("torch_xla", &result("xla:0", "xla", Some("CPU"))).as_deref(),
            Some("xla:0 backed by CPU")
        );
        assert_eq!(
            landed_off_tpu("torch_xla", &result("cpu", "cpu", None)).as_deref(),
            Some("cpu")
        );
        assert_eq!(
            landed_off_tpu("torch_tpu", &result("tpu:0", "tpu", None)),
            None
        );
        assert_eq!(
            landed_off_tpu("torch_tpu", &result("cpu", "cpu", None)).as_deref(),
            Some("cpu")
        );
    }
}
