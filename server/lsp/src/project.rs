//! Which settings a document is checked with: the project configuration that governs its path
//! (the nearest `.tpulint.toml`, `tpulint.toml` or `pyproject.toml` with `[tool.tpulint]`, found
//! and parsed by `tpulint_workspace`, exactly as the CLI does) with the editor's settings on top.
//!
//! One resolver per workspace folder caches what it found; the whole set is rebuilt when a
//! configuration file or the editor's settings change.

use std::path::PathBuf;

use tower_lsp_server::ls_types::Uri;
use tpulint_analyzer::{Configuration, Settings};
use tpulint_workspace::{Overrides, ProjectResolver, is_python_file};

use crate::session::file_path;
use crate::settings::ClientSettings;

/// How one document is to be checked.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// `None`: not checked (not Python, or excluded by its project).
    pub settings: Option<Settings>,
    /// The configuration file in force, when there is one.
    pub config_file: Option<PathBuf>,
    /// A configuration file that could not be read or parsed (defaults are used meanwhile).
    pub error: Option<String>,
}

pub struct Projects {
    /// Workspace folders, deepest first, each with its resolver.
    folders: Vec<(PathBuf, ProjectResolver)>,
    /// For files outside every folder.
    fallback: Option<ProjectResolver>,
    overrides: Overrides,
}

impl std::fmt::Debug for Projects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Projects")
            .field(
                "folders",
                &self
                    .folders
                    .iter()
                    .map(|(root, _)| root)
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Default for Projects {
    fn default() -> Self {
        Projects::new(&[], &ClientSettings::default())
    }
}

impl Projects {
    pub fn new(roots: &[PathBuf], client: &ClientSettings) -> Projects {
        let overrides = overrides(client);
        let mut folders: Vec<(PathBuf, ProjectResolver)> = roots
            .iter()
            .filter_map(|root| {
                // Without an explicit configuration file this cannot fail; a folder that somehow
                // does is checked with the fallback.
                ProjectResolver::new(None, root, overrides.clone())
                    .ok()
                    .map(|resolver| (root.clone(), resolver))
            })
            .collect();
        folders.sort_by_key(|(root, _)| std::cmp::Reverse(root.as_os_str().len()));
        let fallback_root = roots.first().cloned().unwrap_or_else(|| PathBuf::from("/"));
        Projects {
            folders,
            fallback: ProjectResolver::new(None, &fallback_root, overrides.clone()).ok(),
            overrides,
        }
    }

    /// Settings for the document at `uri` (opened with `language_id`).
    pub fn resolve(&self, uri: &Uri, language_id: &str) -> Resolved {
        let path = file_path(uri);
        let is_python = language_id == "python"
            || path.as_deref().is_some_and(is_python_file)
            || uri.as_str().ends_with(".py");
        if !is_python {
            return Resolved {
                settings: None,
                config_file: None,
                error: None,
            };
        }
        let Some(path) = path else {
            // An unsaved buffer: the editor's settings over the defaults.
            return Resolved {
                settings: Some(self.default_settings()),
                config_file: None,
                error: None,
            };
        };
        let resolver = self
            .folders
            .iter()
            .find(|(root, _)| path.starts_with(root))
            .map(|(_, resolver)| resolver)
            .or(self.fallback.as_ref());
        let Some(resolver) = resolver else {
            return Resolved {
                settings: Some(self.default_settings()),
                config_file: None,
                error: None,
            };
        };
        match resolver.resolve_file(&path) {
            Ok(project) => Resolved {
                settings: (!project.is_path_excluded(&path)).then(|| project.settings_for(&path)),
                config_file: project.config_file.clone(),
                error: None,
            },
            Err(error) => Resolved {
                settings: Some(self.default_settings()),
                config_file: None,
                error: Some(error.to_string()),
            },
        }
    }

    fn default_settings(&self) -> Settings {
        // Equal to `ClientSettings::without_project`, which the browser's server uses.
        let mut configuration = Configuration::default();
        self.overrides.apply(&mut configuration);
        configuration.settings_for("untitled.py")
    }
}

/// The editor's settings as overrides of the project's configuration, with the CLI's semantics
/// (a `select` replaces the project's selection).
fn overrides(client: &ClientSettings) -> Overrides {
    Overrides {
        select: client.select.clone(),
        extend_select: client.extend_select.clone(),
        ignore: client.ignore.clone(),
        backend: client.backend,
        ..Overrides::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::str::FromStr;
    use tpulint_analyzer::rule_by_code_or_name;

    fn uri(path: &Path) -> Uri {
        Uri::from_str(&format!("file://{}", path.display())).expect("uri")
    }

    #[test]
    fn project_files_and_editor_settings_combine() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        std::fs::write(
            root.join("pyproject.toml"),
            "[tool.tpulint]\nignore = [\"TPU101\"]\nexclude = [\"vendor\"]\n",
        )
        .expect("write");
        let projects = Projects::new(std::slice::from_ref(&root), &ClientSettings::default());
        let resolved = projects.resolve(&uri(&root.join("a.py")), "python");
        let tpu101 = rule_by_code_or_name("TPU101").expect("rule");
        let settings = resolved.settings.expect("checked");
        assert!(!settings.rules.is_enabled(tpu101));
        assert_eq!(resolved.config_file, Some(root.join("pyproject.toml")));
        assert!(
            projects
                .resolve(&uri(&root.join("vendor/x.py")), "python")
                .settings
                .is_none()
        );
        assert!(
            projects
                .resolve(&uri(&root.join("notes.txt")), "plaintext")
                .settings
                .is_none()
        );

        // The editor's `select` replaces the project's selection (as `--select` does).
        let editor = ClientSettings {
            select: Some(vec![
                tpulint_analyzer::RuleSelector::parse("TPU101").expect("known"),
            ]),
            ..ClientSettings::default()
        };
        let projects = Projects::new(std::slice::from_ref(&root), &editor);
        let settings = projects
            .resolve(&uri(&root.join("a.py")), "python")
            .settings
            .expect("checked");
        assert!(settings.rules.is_enabled(tpu101));
    }

    #[test]
    fn the_project_backend_stands_unless_the_user_set_one() {
        use tpulint_analyzer::BackendSetting;
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        std::fs::write(
            root.join("pyproject.toml"),
            "[tool.tpulint]\nbackend = \"torch_xla\"\n",
        )
        .expect("write");
        let backend = |sent: serde_json::Value| {
            let (client, errors) = ClientSettings::from_json(&sent);
            assert!(errors.is_empty(), "{errors:?}");
            Projects::new(std::slice::from_ref(&root), &client)
                .resolve(&uri(&root.join("train.py")), "python")
                .settings
                .expect("checked")
                .backend
        };
        // What the VS Code extension sends when the user set nothing: the project's backend.
        assert_eq!(
            backend(serde_json::json!({"settings": {"logLevel": "info"}})),
            BackendSetting::TorchXla
        );
        // A backend the user chose overrides the project's, as `--backend` does.
        assert_eq!(
            backend(serde_json::json!({"settings": {"backend": "auto"}})),
            BackendSetting::Auto
        );
        assert_eq!(
            backend(serde_json::json!({"settings": {"backend": "torchtpu"}})),
            BackendSetting::TorchTpu
        );
    }

    #[test]
    fn a_broken_configuration_is_reported_and_defaults_are_used() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        std::fs::write(root.join("tpulint.toml"), "select = [\"NOPE\"]\n").expect("write");
        let projects = Projects::new(std::slice::from_ref(&root), &ClientSettings::default());
        let resolved = projects.resolve(&uri(&root.join("a.py")), "python");
        assert!(resolved.settings.is_some());
        assert!(resolved.error.expect("error").contains("tpulint.toml"));
    }
}
