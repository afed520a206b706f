//! Check options as JavaScript passes them (`{ select, extendSelect, ignore, backend, filename }`),
//! resolved into the analyzer's [`Settings`] through the same [`Configuration`] model the CLI uses.

use crate::json_value::{self, JsonValue};
use tpulint_analyzer::{BackendSetting, Configuration, RuleSelector, Settings};

/// Options of `check` and `applyFixes`. Every field is optional; `{}` means the default rules,
/// backend auto-detection and the file name `-` (as the CLI names stdin).
///
/// Read by hand from [`json_value`] rather than by `#[derive(Deserialize)]` over serde_json: the
/// deserializer and its error formatting cost the WebAssembly module about 10 KB gzipped.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// Replaces the default rule set: codes, prefixes (`TPU1`), names, or `ALL`.
    pub select: Option<Vec<String>>,
    /// Adds to the selected rules.
    pub extend_select: Vec<String>,
    /// Removes rules; a more specific selector wins over a less specific one.
    pub ignore: Vec<String>,
    /// `auto` (default), `torch_xla` or `torchtpu` (aliases as in the CLI).
    pub backend: Option<String>,
    /// The name reported as `filename`, and matched by nothing else here.
    pub filename: Option<String>,
}

/// The file name reported when the caller gives none: the CLI's name for stdin.
pub const DEFAULT_FILENAME: &str = "-";

impl CheckOptions {
    /// Parses options from JSON text (`JSON.stringify` of the JavaScript object; `undefined` and
    /// `null` arrive as an empty string or `null` and mean the defaults).
    pub fn from_json(json: &str) -> Result<CheckOptions, String> {
        let json = json.trim();
        if json.is_empty() || json == "null" {
            return Ok(CheckOptions::default());
        }
        let invalid = |message: String| format!("invalid tpulint options: {message}");
        let value = json_value::parse(json).map_err(invalid)?;
        let JsonValue::Object(fields) = value else {
            return Err(invalid("expected an object".to_string()));
        };
        let mut options = CheckOptions::default();
        for (key, value) in &fields {
            let strings = || -> Result<Vec<String>, String> {
                match value {
                    JsonValue::Null => Ok(Vec::new()),
                    // Loops rather than `collect` into a `Result`, whose adapter instances cost
                    // the module room.
                    JsonValue::Array(items) => {
                        let mut strings = Vec::with_capacity(items.len());
                        for item in items {
                            let JsonValue::String(text) = item else {
                                return Err(invalid(format!("`{key}` must be a list of strings")));
                            };
                            strings.push(text.clone());
                        }
                        Ok(strings)
                    }
                    _ => Err(invalid(format!("`{key}` must be a list of strings"))),
                }
            };
            let string = || -> Result<Option<String>, String> {
                match value {
                    JsonValue::Null => Ok(None),
                    JsonValue::String(text) => Ok(Some(text.clone())),
                    _ => Err(invalid(format!("`{key}` must be a string"))),
                }
            };
            match key.as_str() {
                "select" => {
                    options.select = (*value != JsonValue::Null).then(strings).transpose()?
                }
                "extendSelect" => options.extend_select = strings()?,
                "ignore" => options.ignore = strings()?,
                "backend" => options.backend = string()?,
                "filename" => options.filename = string()?,
                other => {
                    return Err(invalid(format!(
                        "unknown field `{other}`, expected one of `select`, `extendSelect`, `ignore`, `backend`, `filename`"
                    )));
                }
            }
        }
        Ok(options)
    }

    pub fn filename(&self) -> &str {
        self.filename.as_deref().unwrap_or(DEFAULT_FILENAME)
    }

    /// Resolves the options into settings, rejecting unknown selectors and backends the way the
    /// CLI rejects them on its command line.
    pub fn settings(&self) -> Result<Settings, String> {
        let parse_all = |selectors: &[String]| -> Result<Vec<RuleSelector>, String> {
            let mut parsed = Vec::with_capacity(selectors.len());
            for text in selectors {
                parsed.push(RuleSelector::parse(text).map_err(|error| error.to_string())?);
            }
            Ok(parsed)
        };
        let backend = match &self.backend {
            None => BackendSetting::Auto,
            Some(text) => BackendSetting::parse(text).ok_or_else(|| {
                format!("unknown backend `{text}` (expected auto, torch_xla or torchtpu)")
            })?,
        };
        let configuration = Configuration {
            select: self.select.as_deref().map(parse_all).transpose()?,
            extend_select: parse_all(&self.extend_select)?,
            ignore: parse_all(&self.ignore)?,
            backend,
            ..Configuration::default()
        };
        Ok(configuration.settings_for(self.filename()))
    }
}

#[cfg(test)]
mod tests {
    use tpulint_analyzer::{RuleSet, rule_by_code_or_name};

    use super::*;

    #[test]
    fn empty_options_mean_defaults() {
        for text in ["", "null", "{}", "  "] {
            let options = CheckOptions::from_json(text).unwrap();
            assert_eq!(options.settings().unwrap(), Settings::default());
            assert_eq!(options.filename(), "-");
        }
    }

    #[test]
    fn select_and_backend_resolve_like_the_configuration() {
        let options =
            CheckOptions::from_json(r#"{"select":["TPU101"],"backend":"xla","filename":"a.py"}"#)
                .unwrap();
        let settings = options.settings().unwrap();
        let only = rule_by_code_or_name("TPU101").unwrap();
        let mut expected = RuleSet::empty();
        expected.set(only, true);
        assert_eq!(settings.rules, expected);
        assert_eq!(settings.backend, BackendSetting::TorchXla);
        assert_eq!(options.filename(), "a.py");
    }

    #[test]
    fn ignore_removes_a_selected_rule() {
        let options = CheckOptions::from_json(r#"{"select":["ALL"],"ignore":["TPU101"]}"#).unwrap();
        let settings = options.settings().unwrap();
        let id = rule_by_code_or_name("TPU101").unwrap();
        assert!(!settings.rules.is_enabled(id));
        assert!(settings.rules.iter_enabled().next().is_some());
    }

    #[test]
    fn mistakes_are_reported_not_ignored() {
        assert!(
            CheckOptions::from_json(r#"{"selct":["TPU101"]}"#)
                .unwrap_err()
                .contains("unknown field `selct`")
        );
        assert!(CheckOptions::from_json("[1]").is_err());
        assert!(CheckOptions::from_json(r#"{"select":"TPU101"}"#).is_err());
        assert!(CheckOptions::from_json(r#"{"backend":1}"#).is_err());
        let null_select = CheckOptions::from_json(r#"{"select":null,"ignore":["TPU1"]}"#).unwrap();
        assert_eq!(null_select.select, None);
        assert_eq!(null_select.ignore, ["TPU1"]);
        let unknown_rule = CheckOptions::from_json(r#"{"select":["XYZ1"]}"#).unwrap();
        assert!(unknown_rule.settings().unwrap_err().contains("XYZ1"));
        let unknown_backend = CheckOptions::from_json(r#"{"backend":"cuda"}"#).unwrap();
        assert!(unknown_backend.settings().unwrap_err().contains("cuda"));
    }
}
