//! The declared findings (`data/findings.toml`): every id the doctor can report, with its severity,
//! title, why, fix templates and sources, like a rule's documentation. Code chooses which finding
//! applies and fills the templates' `{placeholders}`; it holds no titles, fixes or citations.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::report::{Finding, Fix, Severity};

/// The declarations' text, as shipped.
pub const FINDINGS_TOML: &str = include_str!("../data/findings.toml");

/// Base address of the findings' pages (`docs/doctor.md` in the repository).
pub const DOCS_URL: &str = "https://github.com/tpulint/tpulint/blob/main/docs/doctor.md";

macro_rules! finding_ids {
    ($($variant:ident = $id:literal,)*) => {
        /// Every finding the doctor can report. Each has exactly one declaration in
        /// `data/findings.toml` (a test checks both directions).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum FindingId {
            $($variant,)*
        }

        impl FindingId {
            pub const ALL: &'static [FindingId] = &[$(FindingId::$variant,)*];

            /// The stable kebab-case id (`torch-xla-version-mismatch`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(FindingId::$variant => $id,)*
                }
            }
        }
    };
}

finding_ids! {
    InterpreterNotFound = "interpreter-not-found",
    InterpreterNotExecutable = "interpreter-not-executable",
    ProbeFailed = "probe-failed",
    ProbeTimedOut = "probe-timed-out",
    VirtualEnvStale = "virtual-env-stale",
    PythonTooOld = "python-too-old",
    SystemInterpreter = "system-interpreter",
    NoTpuBackend = "no-tpu-backend",
    TorchMissing = "torch-missing",
    TorchXlaVersionMismatch = "torch-xla-version-mismatch",
    PythonUnsupportedByTorchXla = "python-unsupported-by-torch-xla",
    TorchXlaUnknownRelease = "torch-xla-unknown-release",
    TorchXlaFrozen = "torch-xla-frozen",
    LibtpuMissing = "libtpu-missing",
    TorchXlaLibtpuMismatch = "torch-xla-libtpu-mismatch",
    TorchXlaAbiMismatch = "torch-xla-abi-mismatch",
    TorchvisionAbiMismatch = "torchvision-abi-mismatch",
    TorchaudioAbiMismatch = "torchaudio-abi-mismatch",
    SophgoTorchTpu = "sophgo-torch-tpu",
    TorchTpuUnknownOrigin = "torch-tpu-unknown-origin",
    TorchTpuStub = "torch-tpu-stub",
    TorchTpuTorchMismatch = "torch-tpu-torch-mismatch",
    TpuSyncTorchMismatch = "tpu-sync-torch-mismatch",
    TorchTpuPythonVersion = "torch-tpu-python-version",
    VllmTorchTpuPython = "vllm-torchtpu-python",
    TorchTpuTorchTooOld = "torch-tpu-torch-too-old",
    TorchTpuLibtpuMissing = "torch-tpu-libtpu-missing",
    TorchTpuLibtpuTooOld = "torch-tpu-libtpu-too-old",
    LibtpuKnownProblem = "libtpu-known-problem",
    TorchTpuAutoloadDisabled = "torch-tpu-autoload-disabled",
    TwoTpuBackends = "two-tpu-backends",
    LibtpuNightlyConflict = "libtpu-nightly-conflict",
    TorchvisionMismatch = "torchvision-mismatch",
    TorchaudioMismatch = "torchaudio-mismatch",
    TensorflowWithTorchXla = "tensorflow-with-torch-xla",
    TransformersTpuGate = "transformers-tpu-gate",
    ImportFailed = "import-failed",
    ImportCrashed = "import-crashed",
    ImportTimedOut = "import-timed-out",
    PjrtDeviceUnset = "pjrt-device-unset",
    PjrtDeviceNotTpu = "pjrt-device-not-tpu",
    XlaBf16EnvDeprecated = "xla-bf16-env-deprecated",
    EnvForOtherBackend = "env-for-other-backend",
    EnvReadAtBackendInit = "env-read-at-backend-init",
    TorchTpuDistributedEnv = "torch-tpu-distributed-env",
    NoTpuDevice = "no-tpu-device",
    TpuDeviceNodesMissing = "tpu-device-nodes-missing",
    TpuDevicePermission = "tpu-device-permission",
    TpuDeviceBusy = "tpu-device-busy",
    DeviceHoldersUnknown = "device-holders-unknown",
    StaleLibtpuLockfile = "stale-libtpu-lockfile",
    TpuAllocationFailed = "tpu-allocation-failed",
    TpuAllocationTimedOut = "tpu-allocation-timed-out",
    TpuAllocationNotOnTpu = "tpu-allocation-not-on-tpu",
}

impl FindingId {
    /// The id spelled `id`, if declared.
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|known| known.as_str() == id)
    }

    /// Its declaration.
    pub fn declaration(self) -> &'static Declaration {
        catalog()
            .declaration(self)
            .expect("every FindingId is declared in data/findings.toml (checked by a test)")
    }

    /// Its page: `docs/doctor.md#<id>`.
    pub fn url(self) -> String {
        format!("{DOCS_URL}#{}", self.as_str())
    }
}

/// `data/findings.toml`: citations, then one declaration per finding.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// Named citations the findings' `sources` refer to.
    pub citations: BTreeMap<String, String>,
    /// Section titles of `docs/doctor.md`, in order; each finding names one.
    pub groups: Vec<Group>,
    pub finding: Vec<Declaration>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    pub name: String,
    pub title: String,
}

/// One finding's declaration.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Declaration {
    pub id: String,
    pub group: String,
    pub severity: Severity,
    /// A second severity the finding takes in a stated case (an import of a companion package
    /// fails: warning instead of error).
    #[serde(default)]
    pub lowered: Option<Lowered>,
    /// When it is reported (one sentence, for the docs).
    pub when: String,
    /// Title template.
    pub title: String,
    /// Why it matters on a TPU.
    pub why: String,
    /// Fix templates, best first; code picks the ones that apply by name.
    #[serde(default)]
    pub fix: Vec<FixTemplate>,
    /// Names in `[citations]`.
    pub sources: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Lowered {
    pub severity: Severity,
    pub when: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FixTemplate {
    pub name: String,
    pub description: String,
    pub commands: Vec<String>,
}

impl Catalog {
    pub fn parse(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }

    pub fn declaration(&self, id: FindingId) -> Option<&Declaration> {
        self.finding
            .iter()
            .find(|declaration| declaration.id == id.as_str())
    }

    /// The text of a citation name (the name itself when undeclared; a test forbids that).
    pub fn citation<'a>(&'a self, name: &'a str) -> &'a str {
        self.citations.get(name).map_or(name, String::as_str)
    }
}

/// The shipped declarations, parsed on first use.
///
/// # Panics
/// Never in a released build: the declarations are embedded and a test parses them.
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        Catalog::parse(FINDINGS_TOML).expect("data/findings.toml is embedded and checked by tests")
    })
}

/// Every `{name}` in a template.
pub fn placeholders(template: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        let name = &after[..end];
        if is_placeholder_name(name) {
            names.push(name);
        }
        rest = &after[end + 1..];
    }
    names
}

fn is_placeholder_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

/// Fills `{name}` placeholders; an unknown one stays as written (a test renders every template
/// of every scenario, so this only guards released builds).
pub fn fill(template: &str, vars: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let value = after.find('}').and_then(|end| {
            let name = &after[..end];
            vars.iter()
                .rev()
                .find(|(known, _)| *known == name)
                .map(|(_, value)| (end, value))
        });
        match value {
            Some((end, value)) => {
                out.push_str(value);
                rest = &after[end + 1..];
            }
            None => {
                let name = after.find('}').map(|end| &after[..end]);
                debug_assert!(
                    !name.is_some_and(is_placeholder_name),
                    "template {template:?} needs a value for {name:?}"
                );
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A finding being assembled: the declaration decides the text, the caller the values.
#[derive(Debug, Clone)]
pub struct Draft {
    id: FindingId,
    severity: Severity,
    vars: Vec<(&'static str, String)>,
    detail: String,
    fixes: Vec<&'static str>,
    extra_sources: Vec<String>,
}

impl Draft {
    pub fn new(id: FindingId) -> Self {
        Self {
            id,
            severity: id.declaration().severity,
            vars: Vec::new(),
            detail: String::new(),
            fixes: Vec::new(),
            extra_sources: Vec::new(),
        }
    }

    /// Takes the declaration's `lowered` severity (only declared severities exist).
    pub fn lowered(mut self) -> Self {
        let lowered = self.id.declaration().lowered.as_ref();
        debug_assert!(
            lowered.is_some(),
            "{} declares no lowered severity",
            self.id.as_str()
        );
        if let Some(lowered) = lowered {
            self.severity = lowered.severity;
        }
        self
    }

    pub fn lowered_if(self, condition: bool) -> Self {
        if condition { self.lowered() } else { self }
    }

    pub fn var(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.vars.push((name, value.into()));
        self
    }

    /// Specifics of this environment: versions, paths, error text.
    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = detail.into();
        self
    }

    /// Adds the declared fix `name`.
    pub fn fix(mut self, name: &'static str) -> Self {
        debug_assert!(
            self.id.declaration().fix.iter().any(|fix| fix.name == name),
            "{} declares no fix {name:?}",
            self.id.as_str()
        );
        self.fixes.push(name);
        self
    }

    pub fn fix_if(self, condition: bool, name: &'static str) -> Self {
        if condition { self.fix(name) } else { self }
    }

    /// The compatibility-table entry the finding rests on (its `source` text).
    pub fn source(mut self, source: &str) -> Self {
        if !source.is_empty() && !self.extra_sources.iter().any(|known| known == source) {
            self.extra_sources.push(source.to_string());
        }
        self
    }

    pub fn build(self) -> Finding {
        let catalog = catalog();
        let declaration = self.id.declaration();
        let fixes = self
            .fixes
            .iter()
            .filter_map(|name| declaration.fix.iter().find(|fix| fix.name == *name))
            .map(|template| {
                Fix::new(
                    fill(&template.description, &self.vars),
                    template
                        .commands
                        .iter()
                        .map(|command| fill(command, &self.vars))
                        .collect(),
                )
            })
            .collect();
        let mut sources: Vec<String> = declaration
            .sources
            .iter()
            .map(|name| catalog.citation(name).to_string())
            .collect();
        for source in self.extra_sources {
            if !sources.contains(&source) {
                sources.push(source);
            }
        }
        Finding {
            id: self.id.as_str().to_string(),
            severity: self.severity,
            title: fill(&declaration.title, &self.vars),
            detail: self.detail,
            why: fill(&declaration.why, &self.vars),
            fixes,
            sources,
            url: self.id.url(),
        }
    }
}

/// `tpulint doctor --explain ID`: the declaration as terminal text.
pub fn explain(id: FindingId) -> String {
    let catalog = catalog();
    let declaration = id.declaration();
    let mut out = String::new();
    let _ = writeln!(out, "{} ({})", declaration.id, severity_text(declaration));
    let _ = writeln!(out, "  title: {}", declaration.title);
    let _ = writeln!(out, "  when:  {}", declaration.when);
    let _ = writeln!(out, "  why:   {}", declaration.why);
    for fix in &declaration.fix {
        let _ = writeln!(out, "  fix:   {}", fix.description);
        for command in &fix.commands {
            let _ = writeln!(out, "      $ {command}");
        }
    }
    for source in &declaration.sources {
        let _ = writeln!(out, "  source: {}", catalog.citation(source));
    }
    let _ = writeln!(out, "  docs:  {}", id.url());
    let _ = writeln!(
        out,
        "  ({{python}} is the checked interpreter; other {{names}} are filled from the environment and the compatibility table.)"
    );
    out
}

/// `tpulint doctor --explain ID --output-format json`: the declaration with its sources' text and
/// its page.
pub fn explain_json(id: FindingId) -> serde_json::Value {
    let catalog = catalog();
    let declaration = id.declaration();
    let mut value = serde_json::to_value(declaration).unwrap_or(serde_json::Value::Null);
    if let Some(object) = value.as_object_mut() {
        let sources: Vec<&str> = declaration
            .sources
            .iter()
            .map(|name| catalog.citation(name))
            .collect();
        object.insert("sources".to_string(), serde_json::json!(sources));
        object.insert("url".to_string(), serde_json::json!(id.url()));
    }
    value
}

fn severity_text(declaration: &Declaration) -> String {
    match &declaration.lowered {
        Some(lowered) => format!(
            "{}; {} when {}",
            declaration.severity.as_str(),
            lowered.severity.as_str(),
            lowered.when
        ),
        None => declaration.severity.as_str().to_string(),
    }
}

/// The generated part of `docs/doctor.md`: one section per group, one entry per finding.
pub fn docs_section() -> String {
    let catalog = catalog();
    let mut out = String::new();
    for group in &catalog.groups {
        let _ = writeln!(out, "### {}\n", group.title);
        for declaration in catalog.finding.iter().filter(|d| d.group == group.name) {
            let _ = writeln!(out, "#### `{}`\n", declaration.id);
            let _ = writeln!(
                out,
                "**{}** · {}\n",
                severity_text(declaration),
                escape_markdown(&declaration.title)
            );
            let _ = writeln!(out, "*When:* {}\n", declaration.when);
            let _ = writeln!(out, "*Why it matters:* {}\n", declaration.why);
            for fix in &declaration.fix {
                let _ = writeln!(out, "*Fix:* {}", escape_markdown(&fix.description));
                if fix.commands.is_empty() {
                    out.push('\n');
                } else {
                    let _ = writeln!(out, "\n```sh\n{}\n```\n", fix.commands.join("\n"));
                }
            }
            let _ = writeln!(out, "*Sources:*\n");
            for source in &declaration.sources {
                let _ = writeln!(out, "- {}", catalog.citation(source));
            }
            out.push('\n');
        }
    }
    out
}

fn escape_markdown(text: &str) -> String {
    text.replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_is_declared_once_and_every_declaration_has_an_id() {
        let catalog = Catalog::parse(FINDINGS_TOML).expect("findings.toml parses");
        for id in FindingId::ALL {
            let count = catalog
                .finding
                .iter()
                .filter(|declaration| declaration.id == id.as_str())
                .count();
            assert_eq!(count, 1, "{} is declared {count} times", id.as_str());
        }
        for declaration in &catalog.finding {
            assert!(
                FindingId::from_id(&declaration.id).is_some(),
                "{} is declared but not a FindingId",
                declaration.id
            );
        }
    }

    #[test]
    fn declarations_are_complete_and_cite_declared_sources() {
        let catalog = catalog();
        for declaration in &catalog.finding {
            let id = &declaration.id;
            assert!(
                catalog
                    .groups
                    .iter()
                    .any(|group| group.name == declaration.group),
                "{id}: unknown group {}",
                declaration.group
            );
            for (field, text) in [
                ("title", &declaration.title),
                ("why", &declaration.why),
                ("when", &declaration.when),
            ] {
                assert!(!text.trim().is_empty(), "{id}: empty {field}");
                assert!(!text.contains('\n'), "{id}: {field} is not one line");
            }
            assert!(!declaration.sources.is_empty(), "{id} cites nothing");
            for source in &declaration.sources {
                assert!(
                    catalog.citations.contains_key(source),
                    "{id} cites undeclared {source:?}"
                );
            }
            let mut names: Vec<&str> = declaration
                .fix
                .iter()
                .map(|fix| fix.name.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(
                names.len(),
                declaration.fix.len(),
                "{id}: duplicate fix names"
            );
            if let Some(lowered) = &declaration.lowered {
                assert_ne!(
                    lowered.severity, declaration.severity,
                    "{id}: lowered to itself"
                );
            }
            // Findings that say why something is broken must say how to fix it.
            if declaration.severity != Severity::Info {
                assert!(!declaration.fix.is_empty(), "{id} has no fix");
            }
        }
        for (name, text) in &catalog.citations {
            assert!(text.trim().len() > 10, "citation {name} is empty");
            assert!(
                catalog.finding.iter().any(|d| d.sources.contains(name)),
                "citation {name} is cited by no finding"
            );
        }
    }

    /// Placeholders come from one vocabulary, so a misspelt one fails here, not in a report.
    #[test]
    fn templates_use_known_placeholders() {
        const KNOWN: &[&str] = &[
            "python",
            "path",
            "seconds",
            "python_version",
            "python_minor",
            "venv_python",
            "torch_tpu_index",
            "torch",
            "torch_tpu",
            "libtpu",
            "torch_xla",
            "xla_torch",
            "xla_python",
            "backend",
            "torch_minor",
            "torch_xla_minor",
            "release",
            "release_torch",
            "matching",
            "newer",
            "newer_torch",
            "last_release",
            "pinned",
            "installed_torch_tpu",
            "built_torch",
            "torch_pairing",
            "supported",
            "package",
            "torch_min",
            "installed_libtpu",
            "libtpu_min",
            "problem",
            "wrapper",
            "torchvision",
            "wanted",
            "torchaudio",
            "transformers",
            "module",
            "expected",
            "value",
            "names",
            "reader",
            "count",
            "nodes",
            "devices",
            "holder",
            "pid",
            "user",
            "lockfile",
            "device",
            "snippet",
            "landed",
            "tpu_sync_torch",
        ];
        for declaration in &catalog().finding {
            let mut texts = vec![declaration.title.as_str(), declaration.why.as_str()];
            for fix in &declaration.fix {
                texts.push(&fix.description);
                texts.extend(fix.commands.iter().map(String::as_str));
            }
            for text in texts {
                for name in placeholders(text) {
                    assert!(
                        KNOWN.contains(&name),
                        "{}: unknown placeholder {{{name}}}",
                        declaration.id
                    );
                }
            }
        }
    }

    #[test]
    fn explain_works_for_every_id() {
        for id in FindingId::ALL {
            let text = explain(*id);
            let declaration = id.declaration();
            assert!(text.starts_with(id.as_str()), "{text}");
            assert!(text.contains(&declaration.why), "{text}");
            assert!(text.contains(&id.url()), "{text}");
            for fix in &declaration.fix {
                assert!(text.contains(&fix.description), "{text}");
            }
        }
    }

    #[test]
    fn explain_json_carries_the_declaration() {
        let value = explain_json(FindingId::SophgoTorchTpu);
        assert_eq!(value["id"], "sophgo-torch-tpu");
        assert_eq!(value["severity"], "error");
        assert_eq!(value["lowered"]["severity"], "warning");
        assert_eq!(value["fix"][0]["name"], "replace");
        assert!(
            value["sources"][0]
                .as_str()
                .unwrap()
                .contains("sophgo/torch-tpu")
        );
        assert_eq!(value["url"], FindingId::SophgoTorchTpu.url());
    }

    #[test]
    fn explain_prints_the_declaration() {
        let text = explain(FindingId::TorchTpuTorchMismatch);
        assert!(
            text.starts_with("torch-tpu-torch-mismatch (error; warning when "),
            "{text}"
        );
        assert!(text.contains("deleteNode"));
        assert!(text.contains("docs:  https://github.com/tpulint/tpulint/blob/main/docs/doctor.md#torch-tpu-torch-mismatch"));
    }

    #[test]
    fn fills_known_placeholders_only() {
        let vars = [("python", "/v/bin/python".to_string())];
        assert_eq!(
            fill("{python} -m pip install x", &vars),
            "/v/bin/python -m pip install x"
        );
        assert_eq!(fill("awk '{print $2}'", &vars), "awk '{print $2}'");
        assert_eq!(
            placeholders("{python} {torch_xla} {X} {}"),
            vec!["python", "torch_xla"]
        );
    }
}
