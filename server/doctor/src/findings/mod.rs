//! Turns probe and device facts into findings. Which finding applies is decided here; its title,
//! why, fix templates and sources are declared in `data/findings.toml` (see `catalog`), and every
//! version a fix installs comes from the compatibility table. One module per area:
//! `torch_xla`, `torch_tpu`, `imports`, `environment`, `devices`, `allocation`; the interpreter,
//! the choice of backend and the companion packages are here.

use std::path::Path;

mod allocation;
mod devices;
mod environment;
mod imports;
mod torch_tpu;
mod torch_xla;

pub use allocation::{allocation_snippet, landed_off_tpu};
pub use devices::device_only_findings;

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

/// The Python a new TorchTPU environment gets: one TorchTPU supports that vLLM-TorchTPU needs too.
fn torch_tpu_venv_python(table: &Compatibility) -> String {
    table
        .vllm_torchtpu
        .python
        .iter()
        .find(|python| table.torch_tpu.python.contains(python))
        .or(table.torch_tpu.python.first())
        .cloned()
        .unwrap_or_default()
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

/// An import error's gist, naming the undefined symbol when the gist does not.
fn with_symbol(gist: &str, symbol: &str) -> String {
    if gist.contains(symbol) {
        gist.to_string()
    } else {
        format!("{gist} (undefined symbol {symbol})")
    }
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
    imports::check(&mut context);
    environment::check(&mut context);
    let backend = context.backend;
    device_only_findings(devices, euid, backend, &mut context.findings);
    allocation::check(&mut context);
    context.findings
}

fn interpreter(context: &mut Context<'_>) {
    let table = context.table;
    if !context.probe.metadata_available {
        let newest = &table.torch_xla[0];
        let draft = context
            .draft(FindingId::PythonTooOld)
            .var("python_version", context.probe.python.version.clone())
            .var("venv_python", torch_tpu_venv_python(table))
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
                    ));
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
        torch_xla::check(context, dist);
    }
    if context.backend.has_torch_tpu()
        && let Some(dist) = &torch_tpu
    {
        torch_tpu::check(context, dist, origin == Some(Origin::Google));
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
        .var("venv_python", torch_tpu_venv_python(table))
        .detail(match context.dist("torch") {
            Some(torch) => format!(
                "torch {} is installed, but neither TorchTPU (torch_tpu) nor torch_xla.",
                torch.version
            ),
            None => "Neither torch, TorchTPU (torch_tpu) nor torch_xla is installed.".to_string(),
        });
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
                .var("venv_python", torch_tpu_venv_python(table))
                .var("torch_tpu_index", table.torch_tpu.index_url.clone())
                .detail(format!(
                    "{package} is installed in Python {}.",
                    context.probe.python.version
                ))
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
            .fix("replace");
        context.push(draft);
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
}
