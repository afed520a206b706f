//! Configuration files: discovery (nearest `.tpulint.toml`, `tpulint.toml`, or `pyproject.toml`
//! with a `[tool.tpulint]` table, as ruff finds its own), parsing into the analyzer's
//! [`Configuration`], command-line overrides, and per-directory resolution with a cache.
//!
//! Errors are one line naming the file, the line when known, the key and the problem, because
//! the CLI prints them as `error: …` and the language server shows them as a notification.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tpulint_analyzer::settings::path_matches;
use tpulint_analyzer::{
    BackendSetting, Configuration, LibraryCodePolicy, RuleSelector, RuleSet, Settings,
    TestCodePolicy, TorchXlaVersion,
};

/// File names searched in each directory, in order of preference.
pub const CONFIG_FILE_NAMES: &[&str] = &[".tpulint.toml", "tpulint.toml", "pyproject.toml"];

/// The keys `[tool.tpulint]` accepts.
pub const KNOWN_KEYS: &[&str] = &[
    "select",
    "extend-select",
    "ignore",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "backend",
    "fixable",
    "unfixable",
    "test-code",
    "library-code",
    "cache-dir",
    "torch-xla-version",
];

/// A configuration file that could not be read or understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub path: PathBuf,
    /// 1-based line of the offending key, when it could be located.
    pub line: Option<usize>,
    /// The dotted key, e.g. `tool.tpulint.select`.
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        match &self.key {
            Some(key) => write!(f, ": `{key}`: {}", self.message),
            None => write!(f, ": {}", self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

fn is_pyproject(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name == "pyproject.toml")
}

/// Parses a configuration file's text. A `pyproject.toml` without `[tool.tpulint]` yields `None`.
pub fn parse_config(path: &Path, text: &str) -> Result<Option<Configuration>, ConfigError> {
    let error = |line: Option<usize>, key: Option<String>, message: String| ConfigError {
        path: path.to_path_buf(),
        line,
        key,
        message,
    };
    let document: toml::Table = toml::from_str(text).map_err(|parse_error| {
        let line = parse_error
            .span()
            .map(|span| line_of_offset(text, span.start));
        let message = one_line(&format!("invalid TOML: {}", parse_error.message()));
        error(line, None, message)
    })?;
    let pyproject = is_pyproject(path);
    let (table, prefix, header) = if pyproject {
        let Some(tool) = document.get("tool") else {
            return Ok(None);
        };
        let Some(section) = tool.as_table().and_then(|tool| tool.get("tpulint")) else {
            return Ok(None);
        };
        let Some(table) = section.as_table() else {
            return Err(error(
                find_header_line(text, "tool.tpulint"),
                Some("tool.tpulint".into()),
                "expected a table".into(),
            ));
        };
        (table, "tool.tpulint.", Some("tool.tpulint"))
    } else {
        (&document, "", None)
    };
    let section_start = header.and_then(|h| find_header_line(text, h)).unwrap_or(1);
    let key_error = |key: &str, message: String| {
        error(
            find_key_line(text, section_start, key),
            Some(format!("{prefix}{key}")),
            message,
        )
    };

    let mut configuration = Configuration::default();
    if pyproject {
        // Like ruff's `requires-python`: a pinned torch_xla dependency names the target release
        // unless `torch-xla-version` says otherwise (read below, it wins).
        configuration.torch_xla_version = pinned_torch_xla(&document);
    }
    for (key, value) in table {
        match key.as_str() {
            "select" => {
                let codes = string_list(value).map_err(|m| key_error(key, m))?;
                configuration.select =
                    Some(parse_selectors(&codes).map_err(|m| key_error(key, m))?);
            }
            "extend-select" => {
                let codes = string_list(value).map_err(|m| key_error(key, m))?;
                configuration.extend_select =
                    parse_selectors(&codes).map_err(|m| key_error(key, m))?;
            }
            "ignore" => {
                let codes = string_list(value).map_err(|m| key_error(key, m))?;
                configuration.ignore = parse_selectors(&codes).map_err(|m| key_error(key, m))?;
            }
            "fixable" => {
                let codes = string_list(value).map_err(|m| key_error(key, m))?;
                configuration.fixable =
                    Some(parse_selectors(&codes).map_err(|m| key_error(key, m))?);
            }
            "unfixable" => {
                let codes = string_list(value).map_err(|m| key_error(key, m))?;
                configuration.unfixable = parse_selectors(&codes).map_err(|m| key_error(key, m))?;
            }
            "exclude" | "extend-exclude" => {
                let patterns = string_list(value).map_err(|m| key_error(key, m))?;
                configuration.exclude.extend(patterns);
            }
            "per-file-ignores" => {
                let Some(patterns) = value.as_table() else {
                    return Err(key_error(
                        key,
                        format!(
                            "expected a table of glob = [codes], found {}",
                            describe(value)
                        ),
                    ));
                };
                for (pattern, codes) in patterns {
                    let nested = format!("{key}.\"{pattern}\"");
                    let codes = string_list(codes).map_err(|m| key_error(&nested, m))?;
                    let selectors = parse_selectors(&codes).map_err(|m| key_error(key, m))?;
                    configuration
                        .per_file_ignores
                        .push((pattern.clone(), selectors));
                }
            }
            "backend" => {
                configuration.backend = choice(value, BackendSetting::parse, |name| {
                    format!("unknown backend `{name}` (expected auto, torch_xla or torchtpu)")
                })
                .map_err(|m| key_error(key, m))?;
            }
            "cache-dir" => {
                let Some(directory) = value.as_str().filter(|d| !d.trim().is_empty()) else {
                    return Err(key_error(
                        key,
                        format!("expected a directory path, found {}", describe(value)),
                    ));
                };
                configuration.cache_dir = Some(directory.to_string());
            }
            "torch-xla-version" => {
                let Some(text) = value.as_str() else {
                    return Err(key_error(
                        key,
                        format!(
                            "expected a version string such as \"2.5\", found {}",
                            describe(value)
                        ),
                    ));
                };
                configuration.torch_xla_version =
                    Some(TorchXlaVersion::parse(text).ok_or_else(|| {
                        key_error(
                            key,
                            format!("`{text}` is not a torch_xla version (expected e.g. \"2.5\")"),
                        )
                    })?);
            }
            "library-code" => {
                configuration.library_code = choice(value, LibraryCodePolicy::parse, |name| {
                    format!("unknown value `{name}` (expected hot-paths or all)")
                })
                .map_err(|m| key_error(key, m))?;
            }
            "test-code" => {
                configuration.test_code = choice(value, TestCodePolicy::parse, |name| {
                    format!("unknown value `{name}` (expected errors, all or off)")
                })
                .map_err(|m| key_error(key, m))?;
            }
            other => {
                let hint = match KNOWN_KEYS
                    .iter()
                    .find(|known| **known == other.replace('_', "-"))
                {
                    Some(known) => format!("; did you mean `{known}`?"),
                    None => format!(" (expected one of: {})", KNOWN_KEYS.join(", ")),
                };
                return Err(key_error(other, format!("unknown key{hint}")));
            }
        }
    }
    Ok(Some(configuration))
}

fn parse_selectors(codes: &[String]) -> Result<Vec<RuleSelector>, String> {
    codes
        .iter()
        .map(|code| RuleSelector::parse(code).map_err(|unknown| unknown.to_string()))
        .collect()
}

/// The torch_xla release `[project] dependencies` pins exactly (`torch_xla==2.5.1`,
/// `torch-xla[tpu]~=2.5.0`); `None` for ranges, markers aside, or no such dependency.
fn pinned_torch_xla(document: &toml::Table) -> Option<TorchXlaVersion> {
    let dependencies = document.get("project")?.get("dependencies")?.as_array()?;
    dependencies
        .iter()
        .filter_map(toml::Value::as_str)
        .find_map(|requirement| {
            // PEP 508: name, optional [extras], specifiers, optional `; marker`.
            let requirement = requirement.split(';').next().unwrap_or("").trim();
            let name_end = requirement
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
                .unwrap_or(requirement.len());
            let name = requirement[..name_end]
                .to_ascii_lowercase()
                .replace(['_', '.'], "-");
            if name != "torch-xla" {
                return None;
            }
            let mut rest = requirement[name_end..].trim_start();
            if rest.starts_with('[') {
                rest = rest[rest.find(']')? + 1..].trim_start();
            }
            // One specifier, exact or compatible-release.
            let version = rest
                .strip_prefix("==")
                .or_else(|| rest.strip_prefix("~="))?
                .trim();
            if version.contains(',') {
                return None;
            }
            let version = version.trim_end_matches(".*");
            TorchXlaVersion::parse(version)
        })
}

/// A string naming one of a setting's values: `parse` reads it; `unknown` says what was expected.
fn choice<T>(
    value: &toml::Value,
    parse: fn(&str) -> Option<T>,
    unknown: impl Fn(&str) -> String,
) -> Result<T, String> {
    let Some(name) = value.as_str() else {
        return Err(format!("expected a string, found {}", describe(value)));
    };
    parse(name).ok_or_else(|| unknown(name))
}

fn string_list(value: &toml::Value) -> Result<Vec<String>, String> {
    let Some(items) = value.as_array() else {
        return Err(format!(
            "expected a list of strings, found {}",
            describe(value)
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item.as_str() {
            Some(text) => Ok(text.to_string()),
            None => Err(format!(
                "expected a list of strings, but item {} is {}",
                index + 1,
                describe(item)
            )),
        })
        .collect()
}

fn describe(value: &toml::Value) -> &'static str {
    match value {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "a list",
        toml::Value::Table(_) => "a table",
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn line_of_offset(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Line of a `[header]` table header, e.g. `tool.tpulint`.
fn find_header_line(text: &str, header: &str) -> Option<usize> {
    let compact = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let wanted = format!("[{header}]");
    text.lines()
        .position(|line| compact(line.split('#').next().unwrap_or("")) == wanted)
        .map(|index| index + 1)
}

/// Best-effort line of `key = …` (or of a `[….key]` sub-table header) at or after `from`.
/// Only used to point the user at the right line; `None` when the key cannot be found.
fn find_key_line(text: &str, from: usize, key: &str) -> Option<usize> {
    let base_key = key.split('.').next().unwrap_or(key);
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find(|(_, line)| {
            let trimmed = line.trim_start();
            let unquoted = trimmed.trim_start_matches(['"', '\'']);
            if let Some(rest) = unquoted.strip_prefix(base_key) {
                let rest = rest.trim_start_matches(['"', '\'']).trim_start();
                return rest.starts_with('=');
            }
            trimmed.starts_with('[') && trimmed.trim_end().ends_with(&format!(".{base_key}]"))
        })
        .map(|(index, _)| index + 1)
}

/// Reads and parses a configuration file (a `pyproject.toml` without `[tool.tpulint]` gives
/// the default configuration).
pub fn load_config_file(path: &Path) -> Result<Configuration, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|io_error| ConfigError {
        path: path.to_path_buf(),
        line: None,
        key: None,
        message: format!("cannot read configuration: {io_error}"),
    })?;
    Ok(parse_config(path, &text)?.unwrap_or_default())
}

/// The configuration file governing `directory`: the nearest one in it or its ancestors.
/// A `pyproject.toml` counts only when it has a `[tool.tpulint]` table.
pub fn find_config_file(directory: &Path) -> Result<Option<PathBuf>, ConfigError> {
    for ancestor in directory.ancestors() {
        if let Some(found) = config_file_in(ancestor)? {
            return Ok(Some(found.0));
        }
    }
    Ok(None)
}

/// The configuration file directly in `directory`, parsed.
fn config_file_in(directory: &Path) -> Result<Option<(PathBuf, Configuration)>, ConfigError> {
    for name in CONFIG_FILE_NAMES {
        let candidate = directory.join(name);
        if !candidate.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&candidate).map_err(|io_error| ConfigError {
            path: candidate.clone(),
            line: None,
            key: None,
            message: format!("cannot read configuration: {io_error}"),
        })?;
        if let Some(configuration) = parse_config(&candidate, &text)? {
            return Ok(Some((candidate, configuration)));
        }
    }
    Ok(None)
}

/// Settings given on the command line (or by the editor), layered over the configuration file.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Replaces the file's `select`, `extend-select` and `ignore` (as a later `select` does in ruff).
    pub select: Option<Vec<RuleSelector>>,
    pub extend_select: Vec<RuleSelector>,
    pub ignore: Vec<RuleSelector>,
    pub backend: Option<BackendSetting>,
    pub extend_exclude: Vec<String>,
    /// ruff's `--force-exclude`: files named explicitly (on the command line, by pre-commit)
    /// are excluded too when they match `exclude`. Applies to discovery, not to the
    /// configuration.
    pub force_exclude: bool,
    /// Replaces the configuration's `fixable`.
    pub fixable: Option<Vec<RuleSelector>>,
    /// Added to the configuration's `unfixable`.
    pub unfixable: Vec<RuleSelector>,
}

impl Overrides {
    pub fn apply(&self, configuration: &mut Configuration) {
        if let Some(select) = &self.select {
            configuration.select = Some(select.clone());
            configuration.extend_select.clear();
            configuration.ignore.clear();
        }
        configuration
            .extend_select
            .extend(self.extend_select.iter().cloned());
        configuration.ignore.extend(self.ignore.iter().cloned());
        if let Some(backend) = self.backend {
            configuration.backend = backend;
        }
        configuration
            .exclude
            .extend(self.extend_exclude.iter().cloned());
        if let Some(fixable) = &self.fixable {
            configuration.fixable = Some(fixable.clone());
        }
        configuration
            .unfixable
            .extend(self.unfixable.iter().cloned());
    }
}

/// A configuration together with the directory its paths are relative to.
#[derive(Debug, Clone)]
pub struct Project {
    /// Directory of the configuration file (or the working directory when there is none).
    pub root: PathBuf,
    pub config_file: Option<PathBuf>,
    /// The file's configuration with overrides applied.
    pub configuration: Configuration,
}

impl Project {
    /// `path` relative to the project root with forward slashes, or the whole path when it lies
    /// outside the root.
    pub fn relative_path(&self, path: &Path) -> String {
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        let text = relative.to_string_lossy();
        if std::path::MAIN_SEPARATOR == '/' {
            text.into_owned()
        } else {
            text.replace(std::path::MAIN_SEPARATOR, "/")
        }
    }

    /// The settings for checking the file at `path` (per-file-ignores applied).
    pub fn settings_for(&self, path: &Path) -> Settings {
        self.configuration.settings_for(&self.relative_path(path))
    }

    /// Whether a walk should skip `path`: a default-excluded name (`.git`, `venv`, `build`, …)
    /// or a match of a user `exclude` pattern.
    pub fn is_excluded(&self, path: &Path) -> bool {
        let is_default = path.file_name().is_some_and(|name| {
            tpulint_analyzer::settings::DEFAULT_EXCLUDES
                .iter()
                .any(|excluded| name == *excluded)
        });
        if is_default {
            return true;
        }
        let relative = self.relative_path(path);
        self.configuration
            .exclude
            .iter()
            .any(|pattern| path_matches(pattern, &relative))
    }

    /// Whether `path` or a directory above it (up to the project root) is excluded: what a walk
    /// would have skipped on its way down to `path`. Used for files named explicitly under
    /// `--force-exclude` and by the language server for the documents it is sent.
    pub fn is_path_excluded(&self, path: &Path) -> bool {
        self.is_excluded(path)
            || path
                .ancestors()
                .skip(1)
                .take_while(|ancestor| ancestor.starts_with(&self.root) && *ancestor != self.root)
                .any(|ancestor| self.is_excluded(ancestor))
    }

    /// The enabled rules for a file at `path`, for reports that list them.
    pub fn rules_for(&self, path: &Path) -> RuleSet {
        self.settings_for(path).rules
    }
}

/// Finds the project of every directory once, caching the answer (errors included).
#[derive(Debug)]
pub struct ProjectResolver {
    /// Set by `--config`: one project for every file.
    explicit: Option<Arc<Project>>,
    /// Used when no configuration file governs a path.
    default: Arc<Project>,
    overrides: Overrides,
    cache: Mutex<HashMap<PathBuf, Result<Arc<Project>, ConfigError>>>,
}

impl ProjectResolver {
    /// `config_file` (from `--config`) is loaded now, so its errors surface before any walk.
    /// `working_directory` is the root of files that no configuration governs.
    pub fn new(
        config_file: Option<&Path>,
        working_directory: &Path,
        overrides: Overrides,
    ) -> Result<ProjectResolver, ConfigError> {
        let explicit = match config_file {
            Some(path) => {
                let path = absolute(path, working_directory);
                if !path.is_file() {
                    return Err(ConfigError {
                        path: path.clone(),
                        line: None,
                        key: None,
                        message: "configuration file not found".into(),
                    });
                }
                let mut configuration = load_config_file(&path)?;
                overrides.apply(&mut configuration);
                let root = path
                    .parent()
                    .map_or_else(|| working_directory.to_path_buf(), Path::to_path_buf);
                Some(Arc::new(Project {
                    root,
                    config_file: Some(path),
                    configuration,
                }))
            }
            None => None,
        };
        let mut default_configuration = Configuration::default();
        overrides.apply(&mut default_configuration);
        Ok(ProjectResolver {
            explicit,
            default: Arc::new(Project {
                root: working_directory.to_path_buf(),
                config_file: None,
                configuration: default_configuration,
            }),
            overrides,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The project governing `directory` (an absolute path).
    pub fn resolve_directory(&self, directory: &Path) -> Result<Arc<Project>, ConfigError> {
        if let Some(explicit) = &self.explicit {
            return Ok(explicit.clone());
        }
        if let Some(cached) = self.cache_get(directory) {
            return cached;
        }
        let result = match config_file_in(directory) {
            Err(error) => Err(error),
            Ok(Some((path, mut configuration))) => {
                self.overrides.apply(&mut configuration);
                Ok(Arc::new(Project {
                    root: directory.to_path_buf(),
                    config_file: Some(path),
                    configuration,
                }))
            }
            Ok(None) => match directory.parent() {
                Some(parent) => self.resolve_directory(parent),
                None => Ok(self.default.clone()),
            },
        };
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(directory.to_path_buf(), result.clone());
        }
        result
    }

    /// Whether files named explicitly respect `exclude` (`--force-exclude`).
    pub fn force_exclude(&self) -> bool {
        self.overrides.force_exclude
    }

    /// The project governing a file at `path` (absolute).
    pub fn resolve_file(&self, path: &Path) -> Result<Arc<Project>, ConfigError> {
        match path.parent() {
            Some(parent) => self.resolve_directory(parent),
            None => Ok(self.default.clone()),
        }
    }

    fn cache_get(&self, directory: &Path) -> Option<Result<Arc<Project>, ConfigError>> {
        self.cache.lock().ok()?.get(directory).cloned()
    }
}

/// `path` made absolute against `base` (without resolving symlinks, so displayed paths stay
/// the user's).
pub fn absolute(path: &Path, base: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    normalize(&joined)
}

/// Removes `.` and resolves `..` lexically.
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, text: &str) -> Result<Option<Configuration>, String> {
        parse_config(Path::new(name), text).map_err(|e| e.to_string())
    }

    #[test]
    fn pyproject_without_section_is_not_a_config() {
        assert_eq!(parse("pyproject.toml", "[project]\nname = 'x'\n"), Ok(None));
    }

    #[test]
    fn full_section_parses() {
        let text = r#"
[tool.ruff]
select = ["E"]

[tool.tpulint]
select = ["TPU1", "TPU401"]
extend-select = ["TPU901"]
ignore = ["TPU101"]
exclude = ["vendor"]
backend = "torch_xla"

[tool.tpulint.per-file-ignores]
"tests/*" = ["TPU4"]
"#;
        let configuration = parse("pyproject.toml", text).unwrap().unwrap();
        assert_eq!(configuration.select.as_ref().map(Vec::len), Some(2));
        assert_eq!(configuration.backend, BackendSetting::TorchXla);
        assert_eq!(configuration.exclude, vec!["vendor".to_string()]);
        assert_eq!(configuration.per_file_ignores.len(), 1);
    }

    #[test]
    fn library_code_policy() {
        let configuration = parse("tpulint.toml", "library-code = \"all\"\n")
            .unwrap()
            .unwrap();
        assert_eq!(configuration.library_code, LibraryCodePolicy::All);
        assert_eq!(
            configuration.settings_for("pkg/losses.py").library_code,
            LibraryCodePolicy::All
        );
        let default = parse("tpulint.toml", "backend = \"auto\"\n")
            .unwrap()
            .unwrap();
        assert_eq!(default.library_code, LibraryCodePolicy::HotPaths);
        let error = parse("tpulint.toml", "library-code = \"cold\"\n").unwrap_err();
        assert!(
            error.contains("unknown value `cold` (expected hot-paths or all)"),
            "{error}"
        );
    }

    #[test]
    fn test_code_policy() {
        let configuration = parse("tpulint.toml", "test-code = \"all\"\n")
            .unwrap()
            .unwrap();
        assert_eq!(configuration.test_code, TestCodePolicy::All);
        let default = parse("tpulint.toml", "backend = \"auto\"\n")
            .unwrap()
            .unwrap();
        assert_eq!(default.test_code, TestCodePolicy::ErrorsOnly);
        let settings = default.settings_for("tests/test_ops.py");
        assert!(settings.test_path);
        let error = parse("tpulint.toml", "test-code = \"some\"\n").unwrap_err();
        assert!(
            error.contains("unknown value `some` (expected errors, all or off)"),
            "{error}"
        );
    }

    #[test]
    fn torch_xla_version() {
        let configuration = parse("tpulint.toml", "torch-xla-version = \"2.5\"\n")
            .unwrap()
            .unwrap();
        let version = configuration.settings_for("train.py").torch_xla_version;
        assert_eq!(version.map(|v| v.to_string()).as_deref(), Some("2.5"));
        let patch = parse("tpulint.toml", "torch-xla-version = \"2.10.1\"\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            patch.torch_xla_version.map(|v| (v.major, v.minor)),
            Some((2, 10))
        );
        for bad in ["\"2\"", "\"two.five\"", "\"2.5.1.0\"", "2.5"] {
            let error = parse("tpulint.toml", &format!("torch-xla-version = {bad}\n")).unwrap_err();
            assert!(
                error.contains("`torch-xla-version`") || error.contains("torch-xla-version"),
                "{error}"
            );
        }
    }

    #[test]
    fn a_pinned_torch_xla_dependency_names_the_target() {
        let pinned = |dependency: &str, extra: &str| {
            let text = format!(
                "[project]\nname = \"p\"\ndependencies = [\"torch\", \"{dependency}\"]\n\n[tool.tpulint]\n{extra}"
            );
            parse("pyproject.toml", &text)
                .unwrap()
                .unwrap()
                .torch_xla_version
                .map(|v| v.to_string())
        };
        assert_eq!(pinned("torch_xla==2.5.1", "").as_deref(), Some("2.5"));
        assert_eq!(pinned("torch-xla[tpu]~=2.6.0", "").as_deref(), Some("2.6"));
        assert_eq!(
            pinned("torch_xla==2.4.* ; sys_platform == 'linux'", "").as_deref(),
            Some("2.4")
        );
        assert_eq!(pinned("torch_xla>=2.5", ""), None);
        assert_eq!(pinned("torch_xla>=2.5,<2.7", ""), None);
        assert_eq!(pinned("torch_xlax==2.5", ""), None);
        // The key wins over the pin.
        assert_eq!(
            pinned("torch_xla==2.5.1", "torch-xla-version = \"2.9\"\n").as_deref(),
            Some("2.9")
        );
    }

    #[test]
    fn errors_name_file_line_key_and_problem() {
        let text = "[tool.tpulint]\nselect = [\"TPU101\"]\nselct = [\"TPU1\"]\n";
        let error = parse("pyproject.toml", text).unwrap_err();
        assert!(
            error.starts_with("pyproject.toml:3: `tool.tpulint.selct`: unknown key"),
            "{error}"
        );

        let error = parse("tpulint.toml", "select = [\"TPU999\"]\n").unwrap_err();
        assert!(
            error.contains("tpulint.toml:1: `select`: unknown rule selector `TPU999`"),
            "{error}"
        );

        let error = parse("tpulint.toml", "backend = \"cuda\"\n").unwrap_err();
        assert!(error.contains("unknown backend `cuda`"), "{error}");

        let error = parse("tpulint.toml", "select = \"TPU1\"\n").unwrap_err();
        assert!(
            error.contains("expected a list of strings, found a string"),
            "{error}"
        );

        let error = parse("tpulint.toml", "extend_select = []\n").unwrap_err();
        assert!(error.contains("did you mean `extend-select`?"), "{error}");

        let error = parse("tpulint.toml", "select = [\n").unwrap_err();
        assert!(error.starts_with("tpulint.toml:"), "{error}");
        assert!(!error.contains('\n'), "{error}");
    }

    #[test]
    fn overrides_layer_over_the_file() {
        let mut configuration = parse("tpulint.toml", "ignore = [\"TPU101\"]\n")
            .unwrap()
            .unwrap();
        let overrides = Overrides {
            select: Some(vec![RuleSelector::parse("TPU1").unwrap()]),
            ..Overrides::default()
        };
        overrides.apply(&mut configuration);
        assert!(configuration.ignore.is_empty());
    }

    #[test]
    fn normalize_resolves_dots() {
        assert_eq!(
            absolute(Path::new("./a/../b/c.py"), Path::new("/w")),
            PathBuf::from("/w/b/c.py")
        );
    }
}
