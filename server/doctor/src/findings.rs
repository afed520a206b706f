//! Turns probe and device facts into findings, each with an exact fix for the checked interpreter
//! (its own path in every `pip` command, versions taken from the compatibility table).

use std::path::Path;

use crate::compat::{Compatibility, TorchXlaRelease};
use crate::devices::{DeviceFacts, NodeKind};
use crate::probe::{ChildResult, Distribution, ProbeReport};
use crate::report::{Finding, Fix, Origin, Severity};
use crate::version::{Version, major_minor};

const TROUBLESHOOT: &str =
    "https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md";
const TORCH_TPU_DOCS: &str = "https://docs.cloud.google.com/tpu/docs/pytorch-on-tpu";
const PYTORCH_CPU_INDEX: &str = "https://download.pytorch.org/whl/cpu";

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

fn pip_install(python: &str, requirements: &[String]) -> String {
    let mut command = format!("{python} -m pip install");
    for requirement in requirements {
        command.push(' ');
        command.push_str(&format!("'{requirement}'"));
    }
    command
}

fn xla_pair(release: &TorchXlaRelease) -> Vec<String> {
    vec![
        format!("torch=={}", release.torch),
        format!("torch_xla[tpu]=={}", release.version),
    ]
}

struct Context<'a> {
    table: &'a Compatibility,
    /// Shell-quoted interpreter path.
    python: String,
    probe: &'a ProbeReport,
    /// `"3.11"`.
    python_minor: String,
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

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        id: &str,
        severity: Severity,
        title: impl Into<String>,
        detail: impl Into<String>,
        why: impl Into<String>,
        fixes: Vec<Fix>,
        sources: Vec<String>,
    ) {
        self.findings.push(Finding {
            id: id.to_string(),
            severity,
            title: title.into(),
            detail: detail.into(),
            why: why.into(),
            fixes,
            sources,
        });
    }

    /// A fresh virtual environment with a Python the release supports, then the install.
    fn new_venv_fix(&self, python_minor: &str, requirements: &[String], what: &str) -> Fix {
        let venv = ".venv-tpu";
        Fix::new(
            format!(
                "Create a Python {python_minor} virtual environment for {what} (install python{python_minor} first if it is missing)"
            ),
            vec![
                format!("python{python_minor} -m venv {venv}"),
                pip_install(&format!("{venv}/bin/python"), requirements),
            ],
        )
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
        findings: Vec::new(),
    };
    interpreter(&mut context);
    backends(&mut context);
    companions(&mut context);
    known_bad(&mut context);
    imports(&mut context);
    environment(&mut context);
    device_findings(&mut context, devices, euid);
    allocation(&mut context);
    context.findings
}

fn interpreter(context: &mut Context<'_>) {
    if !context.probe.metadata_available {
        let newest = &context.table.torch_xla[0];
        let python_minor = newest.python.last().cloned().unwrap_or_default();
        let fix = context.new_venv_fix(&python_minor, &xla_pair(newest), "PyTorch/XLA");
        context.push(
            "python-too-old",
            Severity::Error,
            format!("Python {} is too old", context.probe.python.version),
            "`importlib.metadata` is missing (Python 3.8 or newer has it), so installed packages cannot be listed.",
            "No torch_xla release has TPU wheels for this Python; the oldest supported one is 3.8.",
            vec![fix],
            vec![context.table.torch_xla.last().map(|r| r.source.clone()).unwrap_or_default()],
        );
    }
    if !context.probe.python.in_virtualenv {
        let command = format!("{} -m venv .venv", context.python);
        context.push(
            "system-interpreter",
            Severity::Info,
            "Not a virtual environment",
            format!(
                "{} is a system interpreter (prefix {}).",
                context.probe.python.executable, context.probe.python.prefix
            ),
            "Installing torch and torch_xla into a system or user site mixes them with other projects' packages; a mismatched torch pulled in by another package is the most common cause of import failures.",
            vec![Fix::new(
                "Create a virtual environment for the project and install there",
                vec![command, ". .venv/bin/activate".to_string()],
            )],
            vec!["pytorch/xla README.md (installation: 'python3.11 -m venv py311')".to_string()],
        );
    }
}

fn backends(context: &mut Context<'_>) {
    let table = context.table;
    let torch_xla = context.dist("torch_xla").cloned();
    let torch_tpu = context.dist("torch_tpu").cloned();
    let origin = torch_tpu
        .as_ref()
        .map(|dist| torch_tpu_origin(table, dist, context.import("torch_tpu")));
    let google_torch_tpu = origin == Some(Origin::Google);

    if let (Some(dist), Some(origin)) = (&torch_tpu, origin) {
        match origin {
            Origin::Sophgo => {
                let severity = if torch_xla.is_some() {
                    Severity::Warning
                } else {
                    Severity::Error
                };
                let python = context.python.clone();
                context.push(
                    "sophgo-torch-tpu",
                    severity,
                    "The installed `torch_tpu` is Sophgo's package, not Google's TorchTPU",
                    format!(
                        "torch_tpu {} (author: {}, home page: {}) is the PyTorch backend for Sophgo chips; it uses the same import name and device string \"tpu\".",
                        dist.version,
                        dist.author.as_deref().or(dist.author_email.as_deref()).unwrap_or("?"),
                        dist.home_page.as_deref().unwrap_or("?"),
                    ),
                    "`import torch_tpu` and `device=\"tpu\"` will load Sophgo's backend, which cannot drive Google TPUs, and it blocks installing Google's TorchTPU under the same name.",
                    vec![Fix::new(
                        "Uninstall Sophgo's package, then install Google's TorchTPU (Python 3.12)",
                        vec![
                            format!("{python} -m pip uninstall -y torch_tpu"),
                            pip_install(&python, std::slice::from_ref(&table.torch_tpu.install)),
                        ],
                    )],
                    vec![table.sophgo.source.clone()],
                );
            }
            Origin::Unknown => context.push(
                "torch-tpu-unknown-origin",
                Severity::Warning,
                "Cannot tell whether `torch_tpu` is Google's TorchTPU",
                format!(
                    "torch_tpu {} has neither TorchTPU's internals (`torch_tpu._internal`) nor Sophgo's markers.",
                    dist.version
                ),
                "Two unrelated projects publish `torch_tpu`; only Google's drives Google TPUs.",
                vec![Fix::new(
                    "Check where it came from",
                    vec![format!("{} -m pip show -f torch_tpu", context.python)],
                )],
                vec![table.torch_tpu.source.clone(), table.sophgo.source.clone()],
            ),
            Origin::Google => {}
        }
    }

    if torch_xla.is_none() && !google_torch_tpu {
        no_backend(context);
    }
    if let Some(dist) = &torch_xla {
        check_torch_xla(context, dist);
    }
    if google_torch_tpu && let Some(dist) = &torch_tpu {
        check_torch_tpu(context, dist);
    }
    if google_torch_tpu && let Some(xla) = &torch_xla {
        context.push(
            "two-tpu-backends",
            Severity::Warning,
            "Both torch_xla and TorchTPU are installed",
            format!(
                "torch_xla {} and torch_tpu {} share this environment.",
                xla.version,
                torch_tpu.as_ref().map(|d| d.version.as_str()).unwrap_or("?")
            ),
            "Each backend loads libtpu and claims the TPU, and they need different torch releases (torch_xla pins torch to its own version, TorchTPU needs torch 2.10 or newer), so one of them is always mismatched.",
            vec![Fix::new(
                "Keep one backend per virtual environment; for TorchTPU remove torch_xla",
                vec![format!("{} -m pip uninstall -y torch_xla", context.python)],
            )],
            vec![table.torch_tpu.source.clone(), table.rules.torch_xla_pairing.source.clone()],
        );
    }
}

fn no_backend(context: &mut Context<'_>) {
    let table = context.table;
    let mut fixes = Vec::new();
    match table.newest_torch_xla_for_python(&context.python_minor) {
        Some(release) => fixes.push(Fix::new(
            format!(
                "Install PyTorch/XLA {} with its matching torch and libtpu",
                release.version
            ),
            vec![pip_install(&context.python, &xla_pair(release))],
        )),
        None => {
            let newest = &table.torch_xla[0];
            let python_minor = newest.python.last().cloned().unwrap_or_default();
            fixes.push(context.new_venv_fix(&python_minor, &xla_pair(newest), "PyTorch/XLA"));
        }
    }
    let torch_tpu_install = vec![table.torch_tpu.install.clone()];
    if table.torch_tpu.python.contains(&context.python_minor) {
        fixes.push(Fix::new(
            "Or install TorchTPU (it brings a CPU build of torch 2.10+ and libtpu)",
            vec![pip_install(&context.python, &torch_tpu_install)],
        ));
    } else if let Some(python_minor) = table.torch_tpu.python.first() {
        let mut fix = context.new_venv_fix(python_minor, &torch_tpu_install, "TorchTPU");
        fix.description = format!("Or {}", lowercase_first(&fix.description));
        fixes.push(fix);
    }
    let detail = match context.dist("torch") {
        Some(torch) => format!(
            "torch {} is installed, but neither torch_xla nor Google's torch_tpu.",
            torch.version
        ),
        None => "Neither torch, torch_xla nor Google's torch_tpu is installed.".to_string(),
    };
    context.push(
        "no-tpu-backend",
        Severity::Error,
        "No TPU backend for PyTorch is installed",
        detail,
        "Plain PyTorch cannot use a TPU; it needs PyTorch/XLA (device \"xla\") or TorchTPU (device \"tpu\").",
        fixes,
        vec![
            table.torch_xla[0].source.clone(),
            table.torch_tpu.source.clone(),
        ],
    );
}

fn check_torch_xla(context: &mut Context<'_>, xla: &Distribution) {
    let table = context.table;
    let release = table.torch_xla_release(&xla.version).cloned();
    let xla_version = Version::parse(&xla.version);
    let pair_fix = |python: &str| match &release {
        Some(release) => Fix::new(
            format!(
                "Install the torch that torch_xla {} was built for",
                release.version
            ),
            vec![pip_install(python, &xla_pair(release))],
        ),
        None => {
            let minor = xla_version
                .as_ref()
                .map(Version::major_minor_string)
                .unwrap_or_default();
            Fix::new(
                format!(
                    "Install a torch {minor} release (for a nightly torch_xla, the torch nightly of the same date)"
                ),
                vec![pip_install(python, &[format!("torch~={minor}.0")])],
            )
        }
    };
    match context.dist("torch").cloned() {
        None => {
            let fix = pair_fix(&context.python);
            context.push(
                "torch-missing",
                Severity::Error,
                "torch_xla is installed without torch",
                format!("torch_xla {} needs torch, which is not installed.", xla.version),
                "torch_xla extends torch and cannot be imported without it; its package does not declare the dependency, so pip did not install it.",
                vec![fix],
                vec![table.rules.torch_xla_pairing.source.clone()],
            );
        }
        Some(torch) => {
            let torch_minor = major_minor(&torch.version);
            let xla_minor = major_minor(&xla.version);
            if torch_minor.is_some() && xla_minor.is_some() && torch_minor != xla_minor {
                let mut fixes = vec![pair_fix(&context.python)];
                if let Some(matching) = table.torch_xla_for_torch(&torch.version)
                    && release.as_ref().map(|r| &r.version) != Some(&matching.version)
                {
                    fixes.push(Fix::new(
                        format!(
                            "Or keep torch {} and install the torch_xla built for it",
                            torch.version
                        ),
                        vec![pip_install(
                            &context.python,
                            &[format!("torch_xla[tpu]=={}", matching.version)],
                        )],
                    ));
                }
                context.push(
                    "torch-xla-version-mismatch",
                    Severity::Error,
                    format!(
                        "torch {} does not match torch_xla {}",
                        torch.version, xla.version
                    ),
                    format!(
                        "torch_xla {} is built against torch {}.x; torch {} is installed.",
                        xla.version,
                        xla_version
                            .as_ref()
                            .map(Version::major_minor_string)
                            .unwrap_or_default(),
                        torch.version
                    ),
                    "torch_xla's compiled extension links against one torch release; with another one `import torch_xla` fails (typically `_XLAC... undefined symbol`) or crashes. pip does not prevent the mismatch because torch_xla does not declare torch as a dependency.",
                    fixes,
                    vec![
                        table.rules.torch_xla_pairing.source.clone(),
                        "pytorch/xla#2259, #8813 (undefined symbol after mismatched upgrades)".to_string(),
                    ],
                );
            }
        }
    }
    match &release {
        Some(release)
            if !context.python_minor.is_empty()
                && !release.python.contains(&context.python_minor) =>
        {
            let mut fixes = Vec::new();
            if let Some(newer) = table.newest_torch_xla_for_python(&context.python_minor) {
                fixes.push(Fix::new(
                    format!(
                        "Upgrade to torch_xla {}, which has wheels for Python {}",
                        newer.version, context.python_minor
                    ),
                    vec![pip_install(&context.python, &xla_pair(newer))],
                ));
            }
            let python_minor = release.python.last().cloned().unwrap_or_default();
            fixes.push(context.new_venv_fix(
                &python_minor,
                &xla_pair(release),
                &format!("torch_xla {}", release.version),
            ));
            context.push(
                "python-unsupported-by-torch-xla",
                Severity::Error,
                format!(
                    "torch_xla {} has no build for Python {}",
                    release.version, context.python_minor
                ),
                format!(
                    "TPU wheels of torch_xla {} exist for Python {}.",
                    release.version,
                    release.python.join(", ")
                ),
                "A torch_xla built for another Python cannot load its compiled extension in this interpreter.",
                fixes,
                vec![release.source.clone()],
            );
        }
        Some(_) => {}
        None => {
            if xla_version
                .as_ref()
                .is_some_and(|version| !version.prerelease)
            {
                context.push(
                    "torch-xla-unknown-release",
                    Severity::Info,
                    format!("torch_xla {} is not in tpulint's compatibility table", xla.version),
                    format!(
                        "The table (revision {}) knows torch_xla {} to {}; only the torch pairing rule (same major.minor) was checked.",
                        table.revision,
                        table.torch_xla.last().map(|r| r.version.as_str()).unwrap_or("?"),
                        table.torch_xla[0].version
                    ),
                    "Python support per release is only known for listed releases.",
                    Vec::new(),
                    vec![table.rules.torch_xla_pairing.source.clone()],
                );
            }
        }
    }
    // libtpu: from the `libtpu` package, bundled in a `+libtpu` torch_xla build, or (before 2.6)
    // from a real `libtpu-nightly`.
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
    if context.dist(&table.rules.libtpu.package).is_none() && !bundled && !legacy_real {
        let requirement = match &release {
            Some(release) => format!(
                "torch_xla[{}]=={}",
                table.rules.libtpu.torch_xla_extra, release.version
            ),
            None => format!(
                "torch_xla[{}]=={}",
                table.rules.libtpu.torch_xla_extra, xla.version
            ),
        };
        context.push(
            "libtpu-missing",
            Severity::Error,
            "libtpu is not installed",
            format!(
                "torch_xla {} is installed without its TPU runtime (the `libtpu` package).",
                xla.version
            ),
            "Without libtpu torch_xla cannot see the TPU and silently falls back to PJRT_DEVICE=CPU.",
            vec![Fix::new(
                "Install torch_xla with its `tpu` extra, which pins the matching libtpu",
                vec![pip_install(&context.python, &[requirement])],
            )],
            vec![table.rules.libtpu.source.clone(), table.rules.pjrt_device.source.clone()],
        );
    }
}

fn check_torch_tpu(context: &mut Context<'_>, dist: &Distribution) {
    let table = context.table;
    let requirements = &table.torch_tpu;
    if !context.python_minor.is_empty() && !requirements.python.contains(&context.python_minor) {
        let python_minor = requirements.python[0].clone();
        let fix = context.new_venv_fix(
            &python_minor,
            std::slice::from_ref(&requirements.install),
            "TorchTPU",
        );
        context.push(
            "torch-tpu-python-version",
            Severity::Warning,
            format!(
                "TorchTPU is documented for Python {}, this is Python {}",
                requirements.python.join(", "),
                context.python_minor
            ),
            format!("torch_tpu {} runs in Python {}.", dist.version, context.probe.python.version),
            "TorchTPU's install instructions create a Python 3.12 environment; other versions are untested and its compiled parts may not load.",
            vec![fix],
            vec![requirements.source.clone()],
        );
    }
    let minimum = Version::parse(&requirements.torch_min);
    let cpu_torch = |python: &str| {
        Fix::new(
            format!(
                "Install a CPU build of torch {} or newer",
                requirements.torch_min
            ),
            vec![format!(
                "{} --index-url {PYTORCH_CPU_INDEX}",
                pip_install(python, &[format!("torch>={}", requirements.torch_min)])
            )],
        )
    };
    match context.dist("torch").cloned() {
        None => {
            let fix = cpu_torch(&context.python);
            context.push(
                "torch-missing",
                Severity::Error,
                "TorchTPU is installed without torch",
                format!(
                    "torch_tpu {} needs torch {}+.",
                    dist.version, requirements.torch_min
                ),
                "TorchTPU is a PyTorch backend; nothing runs without torch.",
                vec![fix],
                vec![requirements.source.clone()],
            );
        }
        Some(torch) => {
            let installed = Version::parse(&torch.version);
            if let (Some(installed), Some(minimum)) = (installed, &minimum)
                && !installed.at_least(minimum)
            {
                let fix = cpu_torch(&context.python);
                context.push(
                    "torch-tpu-torch-too-old",
                    Severity::Error,
                    format!(
                        "torch {} is too old for TorchTPU (needs {}+)",
                        torch.version, requirements.torch_min
                    ),
                    format!("torch_tpu {} requires torch>={}.", dist.version, requirements.torch_min),
                    "TorchTPU registers the \"tpu\" device through PyTorch APIs that first shipped in torch 2.10; with an older torch it fails to load.",
                    vec![fix],
                    vec![requirements.source.clone()],
                );
            }
        }
    }
    match context.dist(&table.rules.libtpu.package).cloned() {
        None => {
            let requirement = format!("libtpu>={}", requirements.libtpu_min);
            context.push(
                "torch-tpu-libtpu-missing",
                Severity::Error,
                "TorchTPU is installed without libtpu",
                format!("torch_tpu {} is installed but the `libtpu` package is not.", dist.version),
                "TorchTPU loads the TPU runtime from the libtpu package at import (it prints \"libtpu not found.\" otherwise); without it there is no TPU device.",
                vec![Fix::new(
                    "Install libtpu",
                    vec![pip_install(&context.python, &[requirement])],
                )],
                vec![requirements.source.clone()],
            );
        }
        Some(libtpu) => {
            if let (Some(installed), Some(minimum)) = (
                Version::parse(&libtpu.version),
                Version::parse(&requirements.libtpu_min),
            ) && !installed.at_least(&minimum)
            {
                let requirement = format!("libtpu>={}", requirements.libtpu_min);
                context.push(
                    "torch-tpu-libtpu-too-old",
                    Severity::Warning,
                    format!("libtpu {} is older than TorchTPU requires", libtpu.version),
                    format!("torch_tpu declares libtpu>={}.", requirements.libtpu_min),
                    "An older TPU runtime may lack entry points TorchTPU calls.",
                    vec![Fix::new(
                        "Upgrade libtpu",
                        vec![pip_install(&context.python, &[requirement])],
                    )],
                    vec![requirements.source.clone()],
                );
            }
        }
    }
    if context
        .probe
        .env
        .get("TORCH_DEVICE_BACKEND_AUTOLOAD")
        .is_some_and(|value| value.trim() == "0")
    {
        context.push(
            "torch-tpu-autoload-disabled",
            Severity::Info,
            "TORCH_DEVICE_BACKEND_AUTOLOAD=0 turns off TorchTPU's automatic registration",
            "With autoloading off, `torch.device(\"tpu\")` only works after `import torch_tpu`.",
            "Recent TorchTPU builds register the \"tpu\" device when torch is imported; scripts written for that fail with an unknown device.",
            vec![Fix::new(
                "Unset the variable (or import torch_tpu explicitly)",
                vec!["unset TORCH_DEVICE_BACKEND_AUTOLOAD".to_string()],
            )],
            vec![
                "torch_tpu tests/autoload_tpu_test.py (jonathan1920/torch_tpu mirror)".to_string(),
                TORCH_TPU_DOCS.to_string(),
            ],
        );
    }
}

/// libtpu-nightly leftovers, torchvision / torchaudio pairing.
fn companions(context: &mut Context<'_>) {
    let table = context.table;
    let legacy = &table.rules.libtpu.legacy_package;
    if let Some(nightly) = context.dist(legacy).cloned()
        && let Some(libtpu) = context.dist(&table.rules.libtpu.package).cloned()
    {
        let python = context.python.clone();
        context.push(
            "libtpu-nightly-conflict",
            Severity::Warning,
            "Both `libtpu` and the legacy `libtpu-nightly` are installed",
            format!(
                "libtpu {} and libtpu-nightly {} both install the `libtpu` module.",
                libtpu.version, nightly.version
            ),
            "libtpu-nightly was renamed `libtpu` (December 2024); with both present, which libtpu.so is loaded depends on install order, and uninstalling one can delete the other's files.",
            vec![Fix::new(
                "Remove the legacy package, then reinstall libtpu so its files are whole",
                vec![
                    format!("{python} -m pip uninstall -y {legacy}"),
                    format!(
                        "{} --force-reinstall --no-deps",
                        pip_install(&python, &[format!("libtpu=={}", libtpu.version)])
                    ),
                ],
            )],
            vec![table.rules.libtpu.source.clone()],
        );
    }
    let Some(torch) = context.dist("torch").cloned() else {
        return;
    };
    if let Some(vision) = context.dist("torchvision").cloned()
        && let Some(pair) = table.torchvision_for_torch(&torch.version)
        && major_minor(&vision.version) != major_minor(&pair.torchvision)
    {
        let requirement = format!("torchvision~={}.0", pair.torchvision);
        context.push(
            "torchvision-mismatch",
            Severity::Warning,
            format!(
                "torchvision {} does not belong to torch {}",
                vision.version, torch.version
            ),
            format!("torch {} pairs with torchvision {}.", pair.torch, pair.torchvision),
            "torchvision's compiled operators link against one torch release; a mismatch fails at import (`operator torchvision::nms does not exist`) and installing it may silently replace torch with another release, breaking torch_xla.",
            vec![Fix::new(
                "Install the matching torchvision without touching torch",
                vec![format!("{} --no-deps", pip_install(&context.python, &[requirement]))],
            )],
            vec![pair.source.clone()],
        );
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
        let requirement = format!("torchaudio~={}.{}.0", torch_minor.0, torch_minor.1);
        context.push(
            "torchaudio-mismatch",
            Severity::Warning,
            format!(
                "torchaudio {} does not belong to torch {}",
                audio.version, torch.version
            ),
            "torchaudio releases share torch's major.minor version.",
            "torchaudio's compiled extension links against one torch release; a mismatch fails at import.",
            vec![Fix::new(
                "Install the matching torchaudio without touching torch",
                vec![format!("{} --no-deps", pip_install(&context.python, &[requirement]))],
            )],
            vec![table.torchaudio.source.clone()],
        );
    }
}

fn known_bad(context: &mut Context<'_>) {
    let table = context.table;
    for entry in &table.known_bad {
        if !entry
            .installed
            .iter()
            .all(|name| context.dist(name).is_some())
        {
            continue;
        }
        let severity = match entry.severity.as_str() {
            "error" => Severity::Error,
            "info" => Severity::Info,
            _ => Severity::Warning,
        };
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
        let commands = entry
            .fix
            .iter()
            .map(|command| command.replace("{python}", &context.python))
            .collect();
        context.push(
            &entry.id,
            severity,
            entry.title.clone(),
            format!("Installed: {detail}."),
            entry.why.clone(),
            vec![Fix::new("Replace the conflicting package", commands)],
            vec![entry.source.clone()],
        );
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
        match result.status.as_str() {
            "failed" => {
                if let Some(symbol) = &result.undefined_symbol
                    && matches!(module.as_str(), "torch_xla" | "torchvision" | "torchaudio")
                {
                    let mut fixes = Vec::new();
                    if module == "torch_xla"
                        && let Some(xla) = context.dist("torch_xla")
                    {
                        match table.torch_xla_release(&xla.version) {
                            Some(release) => fixes.push(Fix::new(
                                format!("Reinstall torch_xla {} with the torch it was built for", release.version),
                                vec![format!(
                                    "{} --force-reinstall",
                                    pip_install(&context.python, &xla_pair(release))
                                )],
                            )),
                            None => fixes.push(Fix::new(
                                "Reinstall torch and torch_xla from the same release (or the same nightly date)",
                                vec![format!(
                                    "{} --force-reinstall",
                                    pip_install(&context.python, &[format!("torch_xla[tpu]=={}", xla.version)])
                                )],
                            )),
                        }
                    }
                    if context.probe.ld_library_path_set {
                        fixes.push(Fix::new(
                            "LD_LIBRARY_PATH is set and may load another build's libraries; retry without it",
                            vec!["unset LD_LIBRARY_PATH".to_string()],
                        ));
                    }
                    context.push(
                        &format!("{}-abi-mismatch", module.replace('_', "-")),
                        Severity::Error,
                        format!("`import {module}` fails with an undefined symbol"),
                        format!("{gist} (symbol {symbol})"),
                        "An undefined symbol means the compiled extension was built against a different torch (version or C++ ABI flavour) than the one installed.",
                        fixes,
                        vec![
                            "pytorch/xla#2259 ('mismatch between torch and torch_xla'), #8813".to_string(),
                            table.rules.torch_xla_pairing.source.clone(),
                        ],
                    );
                    continue;
                }
                let severity = if core {
                    Severity::Error
                } else {
                    Severity::Warning
                };
                let detail = match &result.stderr_tail {
                    Some(tail) if !tail.is_empty() => format!("{gist}\n{tail}"),
                    _ => gist.clone(),
                };
                context.push(
                    "import-failed",
                    severity,
                    format!("`import {module}` fails"),
                    detail,
                    format!("Any program that imports {module} stops here."),
                    vec![Fix::new(
                        "Reproduce it with the full traceback",
                        vec![format!("{} -c 'import {module}'", context.python)],
                    )],
                    vec![TROUBLESHOOT.to_string()],
                );
            }
            "timed_out" => {
                context.push(
                    "import-timed-out",
                    Severity::Error,
                    format!("`import {module}` hangs"),
                    format!("{gist}."),
                    "A hanging import usually waits for the TPU runtime: another process holds the TPU, or the runtime waits for the other hosts of a multi-host slice.",
                    vec![
                        Fix::new(
                            "Look for a process holding the TPU (see the device findings), then retry with a longer timeout",
                            vec![format!("tpulint doctor --python {} --timeout 120", context.python)],
                        ),
                        Fix::new(
                            "Reproduce it directly",
                            vec![format!("{} -c 'import {module}'", context.python)],
                        ),
                    ],
                    vec!["pytorch/xla#7227 ('TPU Initialization Failed'), #2137 (waiting for the mesh master)".to_string()],
                );
            }
            "crashed" => {
                let severity = if core {
                    Severity::Error
                } else {
                    Severity::Warning
                };
                context.push(
                    "import-crashed",
                    severity,
                    format!("`import {module}` crashes the interpreter"),
                    match &result.stderr_tail {
                        Some(tail) if !tail.is_empty() => format!("{gist}\n{tail}"),
                        _ => gist.clone(),
                    },
                    "A crash on import usually comes from mismatched compiled packages (torch vs torch_xla, numpy 1 vs 2).",
                    vec![Fix::new(
                        "Reproduce it directly",
                        vec![format!("{} -X faulthandler -c 'import {module}'", context.python)],
                    )],
                    vec![table.rules.torch_xla_pairing.source.clone()],
                );
            }
            _ => {}
        }
    }
}

fn environment(context: &mut Context<'_>) {
    let table = context.table;
    if context.dist("torch_xla").is_none() {
        return;
    }
    let expected = &table.rules.pjrt_device.expected;
    match context.probe.env.get("PJRT_DEVICE") {
        None => context.push(
            "pjrt-device-unset",
            Severity::Warning,
            "PJRT_DEVICE is not set",
            "torch_xla chooses its device itself when PJRT_DEVICE is unset.",
            "It picks the TPU only when it finds both libtpu and a TPU on the PCI bus; otherwise it logs 'Defaulting to PJRT_DEVICE=CPU' and your model runs on the CPU.",
            vec![Fix::new(
                "Set it in the shell (or your launcher) before starting Python",
                vec![format!("export PJRT_DEVICE={expected}")],
            )],
            vec![table.rules.pjrt_device.source.clone()],
        ),
        Some(value) if !value.eq_ignore_ascii_case(expected) => context.push(
            "pjrt-device-not-tpu",
            Severity::Warning,
            format!("PJRT_DEVICE={value}: torch_xla will not use the TPU"),
            format!("PJRT_DEVICE selects torch_xla's device; it is `{value}`."),
            "Every \"xla\" tensor is placed on that device instead of the TPU.",
            vec![Fix::new(
                "Select the TPU",
                vec![format!("export PJRT_DEVICE={expected}")],
            )],
            vec![table.rules.pjrt_device.source.clone()],
        ),
        Some(_) => {}
    }
    let deprecated: Vec<&str> = ["XLA_USE_BF16", "XLA_DOWNCAST_BF16"]
        .into_iter()
        .filter(|name| context.probe.env.contains_key(*name))
        .collect();
    if !deprecated.is_empty() {
        context.push(
            "xla-bf16-env-deprecated",
            Severity::Warning,
            format!("{} is deprecated", deprecated.join(", ")),
            "These variables globally downcast f32 to bf16 inside torch_xla.",
            "torch_xla deprecated them after the 2.6 release ('please convert your model to bf16 directly'); newer releases ignore or reject them.",
            vec![Fix::new(
                "Unset them and use `model.to(torch.bfloat16)` or `torch.autocast(\"xla\", dtype=torch.bfloat16)`",
                deprecated.iter().map(|name| format!("unset {name}")).collect(),
            )],
            vec!["torch_xla/csrc/dtype.cpp L11-43 (pytorch/xla 41398bf)".to_string()],
        );
    }
}

fn device_findings(context: &mut Context<'_>, devices: &DeviceFacts, euid: u32) {
    device_only_findings(context.table, devices, euid, &mut context.findings);
}

/// Device findings; also used when no interpreter could be probed.
pub fn device_only_findings(
    table: &Compatibility,
    devices: &DeviceFacts,
    euid: u32,
    findings: &mut Vec<Finding>,
) {
    let source = table.rules.devices.source.clone();
    let mut push =
        |id: &str, severity, title: String, detail: String, why: &str, fixes, sources| {
            findings.push(Finding {
                id: id.to_string(),
                severity,
                title,
                detail,
                why: why.to_string(),
                fixes,
                sources,
            });
        };
    if devices.nodes.is_empty() {
        if devices.pci_chips.is_empty() {
            push(
                "no-tpu-device",
                Severity::Error,
                "No TPU is visible on this machine".to_string(),
                "No /dev/accel* or /dev/vfio/<N> device nodes and no Google TPU on the PCI bus."
                    .to_string(),
                "PyTorch can only use a TPU on a Cloud TPU VM (or a container given its devices); elsewhere torch_xla falls back to the CPU.",
                vec![Fix::new(
                    "Run on a TPU VM (the code and environment can be prepared here)",
                    vec!["gcloud compute tpus tpu-vm ssh <tpu-name> --zone <zone>".to_string()],
                )],
                vec![source.clone()],
            );
        } else {
            let generations: Vec<String> = devices
                .pci_chips
                .iter()
                .map(|chip| format!("{} ({})", chip.generation, chip.address))
                .collect();
            push(
                "tpu-device-nodes-missing",
                Severity::Error,
                format!(
                    "{} TPU chip(s) on the PCI bus but no device nodes",
                    devices.pci_chips.len()
                ),
                format!(
                    "Chips: {}. No /dev/accel* or /dev/vfio/<N> is present.",
                    generations.join(", ")
                ),
                "The TPU runtime opens the device nodes; a container started without them (or a host whose driver is not loaded) sees the chips but cannot use them.",
                vec![Fix::new(
                    "Start the container with the TPU devices",
                    vec!["docker run --privileged --net host ...".to_string()],
                )],
                vec![source.clone()],
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
        push(
            "tpu-device-permission",
            Severity::Error,
            "No permission to open the TPU device nodes".to_string(),
            format!(
                "Not readable and writable by this user: {}.",
                denied.join(", ")
            ),
            "The TPU runtime fails with \"Couldn't open device ... (Operation not permitted)\".",
            vec![Fix::new(
                "Run as a user with access to the devices (or fix their group)",
                vec![format!("ls -l {}", denied.join(" "))],
            )],
            vec![source.clone()],
        );
    }
    // One finding per process, listing every node it holds.
    let mut pids: Vec<u32> = devices.holders.iter().map(|holder| holder.pid).collect();
    pids.dedup();
    for pid in pids {
        let held: Vec<&crate::devices::Holder> = devices
            .holders
            .iter()
            .filter(|holder| holder.pid == pid)
            .collect();
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
        let what = if vfio {
            "Device or resource busy"
        } else {
            "The TPU is already in use by process with pid ..."
        };
        let title = if paths.len() == 1 {
            format!("{} is held by process {pid}", paths[0])
        } else {
            format!("{} are held by process {pid}", paths.join(", "))
        };
        push(
            "tpu-device-busy",
            Severity::Error,
            title,
            format!("pid {pid}: {}", held[0].cmdline),
            &format!(
                "Only one process can own a TPU chip; a new program fails with \"{what}\" or hangs. Interrupted training runs often leave such a process behind."
            ),
            vec![Fix::new(
                format!("Stop process {pid} if it is a stale run (force it if it does not exit)"),
                vec![format!("kill {pid}"), format!("kill -9 {pid}")],
            )],
            vec![
                source.clone(),
                "easy-torch-tpu README ('torch-xla doesn't always close all processes')"
                    .to_string(),
            ],
        );
    }
    if devices.holders.is_empty() && devices.uninspectable_processes > 0 && euid != 0 {
        let nodes: Vec<String> = devices
            .nodes
            .iter()
            .map(|node| node.path.display().to_string())
            .collect();
        push(
            "device-holders-unknown",
            Severity::Info,
            "Other users' processes could not be checked for TPU use".to_string(),
            format!(
                "{} processes belong to other users; only root can see their open files.",
                devices.uninspectable_processes
            ),
            "A process of another user holding the TPU makes every new program fail.",
            vec![Fix::new(
                "Check as root",
                vec![format!("sudo lsof -w {}", nodes.join(" "))],
            )],
            vec!["jax-ml/jax#10192 (suggests `sudo lsof -w /dev/accel0`)".to_string()],
        );
    }
    if let Some(lockfile) = &devices.libtpu_lockfile
        && devices.holders.is_empty()
    {
        push(
            "stale-libtpu-lockfile",
            Severity::Warning,
            format!("{} exists but no process holds the TPU", lockfile.display()),
            "libtpu creates this file when it claims the TPU and removes it on a clean exit."
                .to_string(),
            "A lock file left by a killed process makes the next program fail with \"TPU is already in use\".",
            vec![Fix::new(
                "Remove the stale lock file",
                vec![format!(
                    "rm {}",
                    shell_quote(&lockfile.display().to_string())
                )],
            )],
            vec![table.rules.libtpu.source.clone()],
        );
    }
}

fn allocation(context: &mut Context<'_>) {
    let results = context.probe.allocation.clone();
    for result in results {
        let backend = result.backend.clone().unwrap_or_default();
        let device = if backend == "torch_xla" { "xla" } else { "tpu" };
        let gist = result.error.clone().unwrap_or_default();
        let (id, title) = match result.status.as_str() {
            "ok" => continue,
            "timed_out" => (
                "tpu-allocation-timed-out",
                format!("Allocating a tensor on \"{device}\" hangs"),
            ),
            _ => (
                "tpu-allocation-failed",
                format!("Allocating a tensor on \"{device}\" fails"),
            ),
        };
        let detail = match &result.stderr_tail {
            Some(tail) if !tail.is_empty() => format!("{gist}\n{tail}"),
            _ => gist,
        };
        let snippet = if backend == "torch_xla" {
            "import torch, torch_xla; print((torch.ones(2, 2, device=\"xla\") @ torch.ones(2, 2, device=\"xla\")).cpu())"
        } else {
            "import torch; print((torch.ones(2, 2, device=\"tpu\") @ torch.ones(2, 2, device=\"tpu\")).cpu())"
        };
        context.push(
            id,
            Severity::Error,
            title,
            detail,
            "The documented sanity check — a 2×2 matmul on the TPU copied back to the CPU — does not complete, so no model will run.",
            vec![Fix::new(
                "Reproduce it directly",
                vec![format!("{} -c {}", context.python, shell_quote(snippet))],
            )],
            vec![TROUBLESHOOT.to_string(), TORCH_TPU_DOCS.to_string()],
        );
    }
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().collect::<String>() + chars.as_str(),
        None => String::new(),
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
