//! `tpulint check --show-files` (the files a check would read) and `--show-settings` (for the
//! first of them: which configuration file governs it, the backend, the enabled and fixable
//! rules, excludes and per-file ignores), as text or, with `--output-format json`, JSON.

use std::path::Path;

use tpulint_analyzer::{RuleSelector, RuleSet, Settings, rules};
use tpulint_workspace::{Discovery, Project, ProjectResolver};

use crate::check::{CheckArgs, OutputFormat, display_name};
use crate::output::{self, ExitStatus};

/// One line per file to check, in the order a check reads them; unreadable paths are errors.
pub fn show_files(args: &CheckArgs, discovery: &Discovery, working_directory: &Path) -> ExitStatus {
    let names: Vec<String> = discovery
        .files
        .iter()
        .map(|file| display_name(&file.path, working_directory))
        .collect();
    let text = match args.output_format {
        OutputFormat::Json => pretty(&serde_json::json!(names)),
        _ => names.iter().map(|name| format!("{name}\n")).collect(),
    };
    output::stdout(&text);
    for error in &discovery.path_errors {
        output::error(&error.to_string());
    }
    if discovery.path_errors.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Error
    }
}

/// `--show-settings` for the first file found (or, when there is none, the working directory).
pub fn show_settings_for_discovery(
    args: &CheckArgs,
    discovery: &Discovery,
    resolver: &ProjectResolver,
    working_directory: &Path,
) -> Result<ExitStatus, String> {
    match discovery.files.first() {
        Some(file) => {
            let settings = file.project.settings_for(&file.path);
            let name = display_name(&file.path, working_directory);
            show_settings(args, &name, &file.project, &settings)
        }
        None => {
            let project = resolver
                .resolve_directory(working_directory)
                .map_err(|error| error.to_string())?;
            let settings = project.settings_for(&working_directory.join("-"));
            show_settings(args, ".", &project, &settings)
        }
    }
}

/// Prints the resolved settings of the file shown as `name`.
pub fn show_settings(
    args: &CheckArgs,
    name: &str,
    project: &Project,
    settings: &Settings,
) -> Result<ExitStatus, String> {
    let enabled = rule_codes(&settings.rules);
    let all_fixable = settings.fixable == RuleSet::all();
    let unfixable: Vec<&str> = rules()
        .iter()
        .enumerate()
        .filter(|(index, _)| {
            let id = tpulint_analyzer::RuleId(*index as u16);
            settings.rules.is_enabled(id) && !settings.fixable.is_enabled(id)
        })
        .map(|(_, rule)| rule.code)
        .collect();
    let configuration = &project.configuration;
    let config_file = project
        .config_file
        .as_ref()
        .map(|path| path.display().to_string());
    let per_file_ignores: Vec<(String, String)> = configuration
        .per_file_ignores
        .iter()
        .map(|(pattern, selectors)| (pattern.clone(), selectors_text(selectors)))
        .collect();
    let text = match args.output_format {
        OutputFormat::Json => pretty(&serde_json::json!({
            "file": name,
            "config_file": config_file,
            "project_root": project.root.display().to_string(),
            "backend": settings.backend.as_str(),
            "test_code": settings.test_code.as_str(),
            "library_code": settings.library_code.as_str(),
            "enabled_rules": enabled,
            "unfixable_rules": unfixable,
            "exclude": configuration.exclude,
            "per_file_ignores": per_file_ignores
                .iter()
                .map(|(pattern, codes)| serde_json::json!({ "pattern": pattern, "rules": codes }))
                .collect::<Vec<_>>(),
        })),
        _ => {
            let mut out = format!("Settings for: {name}\n");
            out.push_str(&format!(
                "Configuration file: {}\n",
                config_file
                    .as_deref()
                    .unwrap_or("none (tpulint's defaults)")
            ));
            out.push_str(&format!("Project root: {}\n", project.root.display()));
            let backend_note = match settings.backend {
                tpulint_analyzer::BackendSetting::Auto => " (detected per file from its imports)",
                _ => "",
            };
            out.push_str(&format!(
                "Backend: {}{backend_note}\n",
                settings.backend.as_str()
            ));
            out.push_str(&format!(
                "Test code: {}\nLibrary code: {}\n",
                settings.test_code.as_str(),
                settings.library_code.as_str()
            ));
            out.push_str(&format!("Enabled rules ({}):\n", enabled.len()));
            for code in &enabled {
                let name = tpulint_analyzer::rule_by_code_or_name(code)
                    .map(|id| id.meta().name)
                    .unwrap_or("");
                out.push_str(&format!("    {code}  {name}\n"));
            }
            if all_fixable || unfixable.is_empty() {
                out.push_str("Fixable: every enabled rule\n");
            } else {
                out.push_str(&format!("Unfixable: {}\n", unfixable.join(", ")));
            }
            out.push_str(&format!(
                "Exclude: {}\n",
                list_or_none(&configuration.exclude)
            ));
            if per_file_ignores.is_empty() {
                out.push_str("Per-file ignores: none\n");
            } else {
                out.push_str("Per-file ignores:\n");
                for (pattern, codes) in &per_file_ignores {
                    out.push_str(&format!("    {pattern} = {codes}\n"));
                }
            }
            out
        }
    };
    output::stdout(&text);
    Ok(ExitStatus::Success)
}

fn rule_codes(set: &RuleSet) -> Vec<&'static str> {
    set.iter_enabled().map(|id| id.meta().code).collect()
}

fn selectors_text(selectors: &[RuleSelector]) -> String {
    selectors
        .iter()
        .map(|selector| match selector {
            RuleSelector::All => "ALL".to_string(),
            RuleSelector::Prefix(prefix) => prefix.clone(),
            RuleSelector::Rule(id) => id.meta().code.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none (only the default excludes)".to_string()
    } else {
        items.join(", ")
    }
}

fn pretty(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}
