//! Editor settings (`initializationOptions`, `workspace/didChangeConfiguration`,
//! `workspace/configuration`) and how they combine with a project's configuration file.
//!
//! Settings are read leniently: an invalid value is reported (once, by the server) and ignored,
//! never fatal.

use super::json::JsonRead;
use tpulint_analyzer::{BackendSetting, Configuration, RuleSelector, Settings};

/// How much the server writes to the client's log (`window/logMessage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum LogLevel {
    Error,
    Warn,
    #[default]
    Info,
    Debug,
}

impl LogLevel {
    fn parse(text: &str) -> Option<LogLevel> {
        match text.to_ascii_lowercase().as_str() {
            "error" => Some(LogLevel::Error),
            "warn" | "warning" => Some(LogLevel::Warn),
            "info" => Some(LogLevel::Info),
            "debug" | "trace" => Some(LogLevel::Debug),
            _ => None,
        }
    }
}

/// The settings an editor can send, all optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientSettings {
    /// Replaces the project's `select`, `extend-select` and `ignore` when set.
    pub select: Option<Vec<RuleSelector>>,
    /// Added to the project's `extend-select`.
    pub extend_select: Vec<RuleSelector>,
    /// Added to the project's `ignore`.
    pub ignore: Vec<RuleSelector>,
    /// Overrides the project's backend when set.
    pub backend: Option<BackendSetting>,
    /// Lets "Fix all" apply unsafe fixes too.
    pub unsafe_fixes: bool,
    pub log_level: LogLevel,
}

impl ClientSettings {
    /// Reads settings from any of the shapes clients send: `{"tpulint": {...}}` (Neovim,
    /// Helix), `{"settings": {...}}` (the VS Code extension's initialization options), or the
    /// settings object itself. Returns the settings and one message per invalid value.
    pub fn from_json(value: &impl JsonRead) -> (ClientSettings, Vec<String>) {
        let object = unwrap_section(value);
        let mut settings = ClientSettings::default();
        let mut errors = Vec::new();
        let Some(members) = object.members() else {
            if !object.is_null() {
                errors.push(format!(
                    "tpulint settings must be an object, got `{}`",
                    object.render()
                ));
            }
            return (settings, errors);
        };
        for (key, value) in members {
            match key {
                "select" => settings.select = Some(selectors(key, value, &mut errors)),
                "extendSelect" | "extend-select" | "extend_select" => {
                    settings.extend_select = selectors(key, value, &mut errors);
                }
                "ignore" => settings.ignore = selectors(key, value, &mut errors),
                "backend" => match value.as_str().and_then(BackendSetting::parse) {
                    Some(backend) => settings.backend = Some(backend),
                    None if value.is_null() => {}
                    None => errors.push(format!(
                        "invalid `backend` {}: expected \"auto\", \"torch_xla\" or \"torchtpu\"",
                        value.render()
                    )),
                },
                "unsafeFixes" | "unsafe-fixes" | "unsafe_fixes" => match value.as_bool() {
                    Some(flag) => settings.unsafe_fixes = flag,
                    None => errors.push(format!(
                        "invalid `unsafeFixes` {}: expected a boolean",
                        value.render()
                    )),
                },
                "logLevel" | "log-level" | "log_level" => {
                    match value.as_str().and_then(LogLevel::parse) {
                        Some(level) => settings.log_level = level,
                        None => errors.push(format!(
                            "invalid `logLevel` {}: expected \"error\", \"warn\", \"info\" or \"debug\"",
                            value.render()
                        )),
                    }
                }
                // Settings the VS Code extension uses itself (paths, trace) are not ours to judge.
                _ => {}
            }
        }
        (settings, errors)
    }

    /// The settings of a document no project configuration governs (an unsaved buffer, or a
    /// host without files such as the browser): the editor's settings over the defaults, with
    /// the CLI's semantics (as `--select` etc. over an empty configuration).
    pub fn without_project(&self) -> Settings {
        let configuration = Configuration {
            select: self.select.clone(),
            extend_select: self.extend_select.clone(),
            ignore: self.ignore.clone(),
            backend: self.backend.unwrap_or_default(),
            ..Configuration::default()
        };
        configuration.settings_for("untitled.py")
    }
}

fn unwrap_section<J: JsonRead>(value: &J) -> &J {
    let mut current = value;
    for key in ["settings", "tpulint"] {
        if let Some(inner) = current.get(key).filter(|inner| inner.is_object()) {
            current = inner;
        }
    }
    current
}

fn selectors(key: &str, value: &impl JsonRead, errors: &mut Vec<String>) -> Vec<RuleSelector> {
    let Some(items) = value.as_array() else {
        errors.push(format!(
            "invalid `{key}` {}: expected a list of rule codes",
            value.render()
        ));
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| match item.as_str().map(RuleSelector::parse) {
            Some(Ok(selector)) => Some(selector),
            Some(Err(unknown)) => {
                errors.push(format!("invalid `{key}`: {unknown}"));
                None
            }
            None => {
                errors.push(format!(
                    "invalid `{key}` entry {}: expected a string",
                    item.render()
                ));
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_every_shape_clients_send() {
        for value in [
            json!({"tpulint": {"select": ["TPU101"], "unsafeFixes": true}}),
            json!({"settings": {"select": ["TPU101"], "unsafeFixes": true}}),
            json!({"select": ["TPU101"], "unsafeFixes": true}),
        ] {
            let (settings, errors) = ClientSettings::from_json(&value);
            assert!(errors.is_empty(), "{errors:?}");
            assert_eq!(settings.select.as_ref().map(Vec::len), Some(1));
            assert!(settings.unsafe_fixes);
        }
    }

    #[test]
    fn invalid_values_are_reported_and_ignored() {
        let value = json!({"select": ["TPU101", "NOPE"], "backend": "gpu", "unsafeFixes": "yes", "logLevel": 3});
        let (settings, errors) = ClientSettings::from_json(&value);
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert_eq!(settings.select.as_ref().map(Vec::len), Some(1));
        assert_eq!(settings.backend, None);
        assert!(!settings.unsafe_fixes);
    }
}
