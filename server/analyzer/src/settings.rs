//! Settings: which rules run and which backend a file targets, resolved from a [`Configuration`].
//!
//! The configuration model is shared by every front end: the CLI and the language server fill it
//! from `[tool.tpulint]` / `tpulint.toml` (read by the `tpulint_workspace` crate) and from flags or
//! editor settings; the WebAssembly build fills it from JavaScript. Parsing files is not done here.

use std::fmt;

use crate::registry::{RuleId, rules};

/// Which backend rules and fixes assume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum BackendSetting {
    /// Detect per file from imports and device strings.
    #[default]
    Auto,
    TorchXla,
    TorchTpu,
}

impl BackendSetting {
    pub fn parse(text: &str) -> Option<BackendSetting> {
        match text.to_ascii_lowercase().replace('-', "_").as_str() {
            "auto" => Some(BackendSetting::Auto),
            "torch_xla" | "xla" | "pytorch_xla" => Some(BackendSetting::TorchXla),
            "torchtpu" | "torch_tpu" | "tpu" => Some(BackendSetting::TorchTpu),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            BackendSetting::Auto => "auto",
            BackendSetting::TorchXla => "torch_xla",
            BackendSetting::TorchTpu => "torchtpu",
        }
    }
}

/// The torch_xla release a project targets (`torch-xla-version = "2.5"`): a major and minor
/// version. Unset, rules assume the current release (2.9, the last one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TorchXlaVersion {
    pub major: u16,
    pub minor: u16,
}

impl TorchXlaVersion {
    /// `"2.5"`, `"2.5.1"`, `"2.10"`; `None` for anything else.
    pub fn parse(text: &str) -> Option<TorchXlaVersion> {
        let mut parts = text.trim().split('.');
        // Read as `u32` (the patch level's parser) and narrowed: the same strings as `u16`'s
        // parser, without a second integer parser in the WebAssembly module.
        let number = |part: &str| u16::try_from(part.parse::<u32>().ok()?).ok();
        let major = number(parts.next()?)?;
        let minor = number(parts.next()?)?;
        // A patch level is allowed and ignored; anything after it is not a version.
        if let Some(patch) = parts.next()
            && (patch.parse::<u32>().is_err() || parts.next().is_some())
        {
            return None;
        }
        Some(TorchXlaVersion { major, minor })
    }
}

impl fmt::Display for TorchXlaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What is reported in test code (pytest and unittest tests, files under `tests/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum TestCodePolicy {
    /// Only errors: what would make the test fail on a TPU. Slow or unidiomatic code in a test
    /// costs nothing in training (the default).
    #[default]
    ErrorsOnly,
    /// Everything, as in other code.
    All,
    /// Nothing.
    Off,
}

impl TestCodePolicy {
    pub fn parse(text: &str) -> Option<TestCodePolicy> {
        match text.to_ascii_lowercase().as_str() {
            "errors" | "errors-only" => Some(TestCodePolicy::ErrorsOnly),
            "all" => Some(TestCodePolicy::All),
            "off" | "none" => Some(TestCodePolicy::Off),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TestCodePolicy::ErrorsOnly => "errors",
            TestCodePolicy::All => "all",
            TestCodePolicy::Off => "off",
        }
    }
}

/// What is reported in the functions of a library module that no hot path of the file reaches
/// (`library-code`). A rule that reports a cost (a sync, a fallback, a dynamic shape, a float64
/// tensor) off every hot path demotes the finding to information; in a library module such a
/// function's callers are elsewhere, so the finding says nothing the user can weigh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum LibraryCodePolicy {
    /// Findings a rule demoted to information because no hot path reaches the code are left
    /// out (the default); everything else is reported as in other code.
    #[default]
    HotPaths,
    /// Those findings too, as information.
    All,
}

impl LibraryCodePolicy {
    pub fn parse(text: &str) -> Option<LibraryCodePolicy> {
        match text.to_ascii_lowercase().as_str() {
            "hot-paths" => Some(LibraryCodePolicy::HotPaths),
            "all" => Some(LibraryCodePolicy::All),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LibraryCodePolicy::HotPaths => "hot-paths",
            LibraryCodePolicy::All => "all",
        }
    }
}

/// Whether a path names test code: a `test`, `tests` or `testing` directory, `test_*.py`,
/// `*_test.py`, `tests.py` or `conftest.py`, and test-helper modules (`test_utils`,
/// `testing_utils`) (forward slashes).
pub fn is_test_path(path: &str) -> bool {
    let mut components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let Some(file) = components.pop() else {
        return false;
    };
    let stem = file
        .strip_suffix(".py")
        .or_else(|| file.strip_suffix(".ipynb"))
        .unwrap_or(file);
    components.iter().any(|dir| {
        matches!(
            *dir,
            "test" | "tests" | "testing" | "unittests" | "test_utils" | "testing_utils"
        )
    }) || stem.starts_with("test_")
        || stem.ends_with("_test")
        || matches!(stem, "tests" | "conftest" | "testing_utils" | "test_utils")
}

/// Whether a path is host data-pipeline code by the conventions of PyTorch projects: a
/// `transforms/` or `datasets/` package (torchvision), an image or video processor
/// (`image_processing_*.py`, `image_processor.py`, `video_processor.py`), an image-transform module
/// (`image_transforms.py`, `*_transforms.py`), a feature extractor (`feature_extraction_*.py`) or a
/// tokenizer (`tokenization_*.py`).
/// They run in DataLoader workers or before the model is called, on host tensors.
pub fn is_data_pipeline_path(path: &str) -> bool {
    let mut components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let Some(file) = components.pop() else {
        return false;
    };
    let stem = file.strip_suffix(".py").unwrap_or(file);
    components
        .iter()
        .any(|dir| matches!(*dir, "transforms" | "datasets"))
        || stem.starts_with("image_processing_")
        || stem.starts_with("feature_extraction_")
        || stem.starts_with("tokenization_")
        || stem.starts_with("video_processing_")
        || stem.ends_with("_transforms")
        || matches!(
            stem,
            "image_processor" | "video_processor" | "image_transforms" | "transforms"
        )
}

/// Whether a path is a checkpoint converter by the convention of model repositories
/// (`convert_llama_weights_to_hf.py`, `convert_from_ckpt.py`, `scripts/convert_*.py`): a script
/// run once, offline, usually on the CPU, to rewrite a checkpoint.
pub fn is_converter_path(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.strip_suffix(".py").unwrap_or(file);
    stem.starts_with("convert_") || stem == "convert"
}

/// A rule selector: `ALL`, a family or code prefix (`TPU1`, `TPU10`), a code, or a rule name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RuleSelector {
    All,
    Prefix(String),
    Rule(RuleId),
}

/// A selector that names nothing tpulint knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSelector(pub String);

impl fmt::Display for UnknownSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown rule selector `{}` (expected ALL, a prefix such as TPU1, a code such as TPU101, or a rule name)",
            self.0
        )
    }
}

impl std::error::Error for UnknownSelector {}

impl RuleSelector {
    pub fn parse(text: &str) -> Result<RuleSelector, UnknownSelector> {
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("ALL") {
            return Ok(RuleSelector::All);
        }
        if let Some(id) = crate::registry::rule_by_code_or_name(trimmed) {
            return Ok(RuleSelector::Rule(id));
        }
        let upper = trimmed.to_ascii_uppercase();
        if upper.starts_with("TPU") && rules().iter().any(|rule| rule.code.starts_with(&upper)) {
            return Ok(RuleSelector::Prefix(upper));
        }
        Err(UnknownSelector(trimmed.to_string()))
    }

    fn matches(&self, id: RuleId) -> bool {
        match self {
            RuleSelector::All => true,
            RuleSelector::Prefix(prefix) => id.meta().code.starts_with(prefix.as_str()),
            RuleSelector::Rule(rule) => *rule == id,
        }
    }

    /// How specific the selector is; a more specific `ignore` or `select` wins (as in ruff).
    fn specificity(&self) -> usize {
        match self {
            RuleSelector::All => 0,
            RuleSelector::Prefix(prefix) => prefix.len(),
            RuleSelector::Rule(_) => usize::MAX,
        }
    }
}

/// The set of enabled rules.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RuleSet {
    enabled: Vec<bool>,
}

impl RuleSet {
    /// Rules enabled by default.
    pub fn defaults() -> RuleSet {
        RuleSet {
            enabled: rules().iter().map(|rule| rule.enabled_by_default).collect(),
        }
    }

    /// Every rule.
    pub fn all() -> RuleSet {
        RuleSet {
            enabled: vec![true; rules().len()],
        }
    }

    pub fn empty() -> RuleSet {
        RuleSet {
            enabled: vec![false; rules().len()],
        }
    }

    /// Resolves `select` (or the defaults), `extend_select` and `ignore`. Between a select and an
    /// ignore that both match a rule, the more specific selector wins; on a tie, ignore wins.
    pub fn from_selectors(
        select: Option<&[RuleSelector]>,
        extend_select: &[RuleSelector],
        ignore: &[RuleSelector],
    ) -> RuleSet {
        let enabled = rules()
            .iter()
            .enumerate()
            .map(|(index, rule)| {
                let id = RuleId(index as u16);
                let best = |selectors: &[RuleSelector]| {
                    selectors
                        .iter()
                        .filter(|s| s.matches(id))
                        .map(RuleSelector::specificity)
                        .max()
                };
                let selected = match select {
                    Some(select) => best(select),
                    None if rule.enabled_by_default => Some(0),
                    None => None,
                };
                let selected = selected.max(best(extend_select));
                match (selected, best(ignore)) {
                    (None, _) => false,
                    (Some(_), None) => true,
                    (Some(s), Some(i)) => s > i,
                }
            })
            .collect();
        RuleSet { enabled }
    }

    pub fn is_enabled(&self, id: RuleId) -> bool {
        self.enabled.get(id.0 as usize).copied().unwrap_or(false)
    }

    pub fn set(&mut self, id: RuleId, on: bool) {
        if let Some(slot) = self.enabled.get_mut(id.0 as usize) {
            *slot = on;
        }
    }

    pub fn disable_matching(&mut self, selectors: &[RuleSelector]) {
        for index in 0..self.enabled.len() {
            let id = RuleId(index as u16);
            if selectors.iter().any(|s| s.matches(id)) {
                self.enabled[index] = false;
            }
        }
    }

    pub fn iter_enabled(&self) -> impl Iterator<Item = RuleId> + '_ {
        self.enabled
            .iter()
            .enumerate()
            .filter(|(_, on)| **on)
            .map(|(index, _)| RuleId(index as u16))
    }
}

/// Settings for checking one file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Settings {
    pub rules: RuleSet,
    pub backend: BackendSetting,
    /// Rules whose fixes are kept (ruff's `fixable` minus `unfixable`); the others' diagnostics
    /// are reported without a fix.
    pub fixable: RuleSet,
    /// What is reported in test code.
    pub test_code: TestCodePolicy,
    /// What is reported in library modules' functions that no hot path reaches.
    pub library_code: LibraryCodePolicy,
    /// Whether the file's path says it is test code (see [`is_test_path`]); code inside test
    /// functions and classes counts as test code in any file.
    pub test_path: bool,
    /// Whether the file's path says it is host data-pipeline code (see
    /// [`is_data_pipeline_path`]).
    pub data_pipeline_path: bool,
    /// Whether the file's path says it is a checkpoint converter (see [`is_converter_path`]).
    pub converter_path: bool,
    /// `torch-xla-version`: the torch_xla release the project targets; `None`: the current one.
    pub torch_xla_version: Option<TorchXlaVersion>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            rules: RuleSet::defaults(),
            backend: BackendSetting::Auto,
            fixable: RuleSet::all(),
            test_code: TestCodePolicy::default(),
            library_code: LibraryCodePolicy::default(),
            test_path: false,
            data_pipeline_path: false,
            converter_path: false,
            torch_xla_version: None,
        }
    }
}

impl Settings {
    /// Settings with exactly one rule enabled (used by tests and `tpulint rule`).
    pub fn only(id: RuleId) -> Settings {
        let mut rules = RuleSet::empty();
        rules.set(id, true);
        Settings {
            rules,
            ..Settings::default()
        }
    }

    /// Drops the fixes of rules that are not fixable (`unfixable`, or outside `fixable`).
    pub fn remove_unfixable_fixes(&self, diagnostics: &mut [crate::diagnostic::Diagnostic]) {
        if self.fixable.enabled.iter().all(|fixable| *fixable) {
            return;
        }
        for diagnostic in diagnostics {
            if diagnostic.fix.is_some()
                && let Some(id) = crate::registry::rule_by_code_or_name(diagnostic.code)
                && !self.fixable.is_enabled(id)
            {
                diagnostic.fix = None;
            }
        }
    }
}

/// The user's configuration, before it is resolved for a particular file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Configuration {
    /// `None`: the default rule set.
    pub select: Option<Vec<RuleSelector>>,
    pub extend_select: Vec<RuleSelector>,
    pub ignore: Vec<RuleSelector>,
    /// `(glob, selectors)`: rules switched off for matching paths.
    pub per_file_ignores: Vec<(String, Vec<RuleSelector>)>,
    /// Globs of paths not to check, relative to the project root.
    pub exclude: Vec<String>,
    pub backend: BackendSetting,
    /// Rules whose fixes may be applied; `None`: all of them.
    pub fixable: Option<Vec<RuleSelector>>,
    /// Rules whose fixes are never offered or applied.
    pub unfixable: Vec<RuleSelector>,
    /// `test-code`: what is reported in test code.
    pub test_code: TestCodePolicy,
    /// `library-code`: what is reported in library modules' functions that no hot path reaches.
    pub library_code: LibraryCodePolicy,
    /// `cache-dir`: where `tpulint check` keeps its content cache, relative to the project root
    /// (read by the CLI; the engine ignores it).
    pub cache_dir: Option<String>,
    /// `torch-xla-version`: the torch_xla release the project targets.
    pub torch_xla_version: Option<TorchXlaVersion>,
}

/// Paths every check skips, like ruff's default excludes.
pub const DEFAULT_EXCLUDES: &[&str] = &[
    ".git",
    ".hg",
    ".mypy_cache",
    ".nox",
    ".tox",
    ".venv",
    "venv",
    "__pypackages__",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "__pycache__",
];

impl Configuration {
    /// Settings for the file at `relative_path` (forward slashes, relative to the project root).
    pub fn settings_for(&self, relative_path: &str) -> Settings {
        let mut rules =
            RuleSet::from_selectors(self.select.as_deref(), &self.extend_select, &self.ignore);
        for (pattern, selectors) in &self.per_file_ignores {
            if path_matches(pattern, relative_path) {
                rules.disable_matching(selectors);
            }
        }
        let fixable = RuleSet::from_selectors(
            Some(self.fixable.as_deref().unwrap_or(&[RuleSelector::All])),
            &[],
            &self.unfixable,
        );
        Settings {
            rules,
            backend: self.backend,
            fixable,
            test_code: self.test_code,
            library_code: self.library_code,
            test_path: is_test_path(relative_path),
            data_pipeline_path: is_data_pipeline_path(relative_path),
            converter_path: is_converter_path(relative_path),
            torch_xla_version: self.torch_xla_version,
        }
    }

    /// Whether `relative_path` is excluded by `exclude` or the default excludes.
    pub fn is_excluded(&self, relative_path: &str) -> bool {
        let components: Vec<&str> = relative_path.split('/').collect();
        if components.iter().any(|c| DEFAULT_EXCLUDES.contains(c)) {
            return true;
        }
        self.exclude
            .iter()
            .any(|pattern| path_matches(pattern, relative_path))
    }
}

/// Matches a path against a glob the way `exclude` and `per-file-ignores` patterns are written:
/// `*` and `?` within a component, `**` across components; a pattern without `/` matches the
/// file name or any directory name; a pattern naming a directory matches everything below it.
pub fn path_matches(pattern: &str, path: &str) -> bool {
    let pattern = pattern.trim_start_matches("./").trim_end_matches('/');
    let path = path.trim_start_matches("./");
    if pattern.is_empty() {
        return false;
    }
    let pattern_parts: Vec<&str> = pattern.split('/').collect();
    let path_parts: Vec<&str> = path.split('/').collect();
    if !pattern.contains('/') {
        return path_parts.iter().any(|part| glob_component(pattern, part));
    }
    // A directory pattern matches its contents: try every prefix of the path.
    (1..=path_parts.len()).any(|len| glob_parts(&pattern_parts, &path_parts[..len]))
}

fn glob_parts(pattern: &[&str], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|skip| glob_parts(rest, &path[skip..])),
        Some((first, rest)) => match path.split_first() {
            Some((component, path_rest)) => {
                glob_component(first, component) && glob_parts(rest, path_rest)
            }
            None => false,
        },
    }
}

/// `*` and `?` wildcards within one path component (iterative, no backtracking blow-up).
fn glob_component(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == '?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    while p < pattern.len() && pattern[p] == '*' {
        p += 1;
    }
    p == pattern.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(path_matches("tests/*.py", "tests/test_a.py"));
        assert!(!path_matches("tests/*.py", "src/tests/test_a.py"));
        assert!(path_matches("**/tests/*.py", "src/tests/test_a.py"));
        assert!(path_matches("test_*.py", "src/test_a.py"));
        assert!(path_matches("vendor", "vendor/x/y.py"));
        assert!(path_matches("third_party/", "third_party/x.py"));
        assert!(!path_matches("*.pyi", "a.py"));
    }

    #[test]
    fn test_paths() {
        assert!(is_test_path("tests/models/test_bert.py"));
        assert!(is_test_path("src/pkg/test/helpers.py"));
        assert!(is_test_path("conftest.py"));
        assert!(is_test_path("pkg/ops_test.py"));
        assert!(is_test_path("src/diffusers/utils/testing_utils.py"));
        assert!(is_test_path(
            "src/accelerate/test_utils/scripts/external_deps/x.py"
        ));
        assert!(!is_test_path("examples/train.py"));
        assert!(!is_test_path("src/contest.py"));
        assert!(!is_test_path("latest/train.py"));
    }

    #[test]
    fn converter_paths() {
        assert!(is_converter_path(
            "models/llama/convert_llama_weights_to_hf.py"
        ));
        assert!(is_converter_path("scripts/convert_from_ckpt.py"));
        assert!(!is_converter_path("models/llama/modeling_llama.py"));
        assert!(!is_converter_path("utils/conversion.py"));
    }

    #[test]
    fn data_pipeline_paths() {
        assert!(is_data_pipeline_path(
            "torchvision/transforms/v2/functional/_color.py"
        ));
        assert!(is_data_pipeline_path(
            "src/transformers/models/sam/image_processing_sam.py"
        ));
        assert!(is_data_pipeline_path("diffusers/image_processor.py"));
        assert!(is_data_pipeline_path("pkg/datasets/mnist.py"));
        assert!(is_data_pipeline_path("pkg/audio_transforms.py"));
        assert!(is_data_pipeline_path("models/bert/tokenization_bert.py"));
        assert!(!is_data_pipeline_path("train.py"));
        assert!(!is_data_pipeline_path("models/detection/roi_heads.py"));
        assert!(!is_data_pipeline_path("data/loader.py"));
    }
}
