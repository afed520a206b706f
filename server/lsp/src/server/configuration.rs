//! Settings (`didChangeConfiguration`, `workspace/configuration`), workspace folders, and watched
//! configuration and trace files.

use super::*;

impl Server {
    /// Pulls the `tpulint` section with `workspace/configuration` when the client supports it.
    pub(super) async fn pull_client_settings(&self) -> Option<Value> {
        if !self.session.negotiated().configuration_requests {
            return None;
        }
        let items = vec![ConfigurationItem {
            scope_uri: None,
            section: Some("tpulint".to_string()),
        }];
        match self.client.configuration(items).await {
            // A client with nothing to say answers `null`: keep the settings we have.
            Ok(mut values) if !values.is_empty() && !values[0].is_null() => {
                Some(values.swap_remove(0))
            }
            Ok(_) => None,
            Err(error) => {
                self.log(
                    LogLevel::Warn,
                    format!("workspace/configuration failed: {error}"),
                )
                .await;
                None
            }
        }
    }

    /// A ticket for a settings update; take it before the handler's first `.await`, so that
    /// tickets follow the order in which the client sent its notifications.
    pub(super) fn settings_ticket(&self) -> u64 {
        self.settings_tickets.fetch_add(1, AtomicOrdering::Relaxed) + 1
    }

    /// Applies editor settings unless settings of a later ticket are already in force (their
    /// `workspace/configuration` response came first). Returns whether they were applied.
    pub(super) async fn apply_client_settings(&self, value: &Value, ticket: u64) -> bool {
        let (client_settings, errors) = ClientSettings::from_json(value);
        {
            let mut applied = self
                .settings_applied
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if ticket < *applied {
                return false;
            }
            *applied = ticket;
            self.session.update_config(|config| {
                config.projects = Arc::new(Projects::new(&config.roots, &client_settings));
                config.client = client_settings;
            });
        }
        self.report_setting_errors(errors).await;
        true
    }

    /// Forgets every configuration file found so far; they are read again on the next check.
    pub(super) fn reload_projects(&self) {
        self.session.update_config(|config| {
            config.projects = Arc::new(Projects::new(&config.roots, &config.client));
        });
    }

    pub(super) async fn register_config_watchers(&self) {
        if !self.session.negotiated().watched_files_registration {
            return;
        }
        let watchers = CONFIG_FILE_NAMES
            .iter()
            .map(|name| format!("**/{name}"))
            // Runtime findings of `tpulint trace` (see `runtime`).
            .chain(std::iter::once(format!("**/{}", tpulint_trace::TRACE_PATH)))
            .map(|glob| FileSystemWatcher {
                glob_pattern: GlobPattern::String(glob),
                kind: None,
            })
            .collect();
        let registration = Registration {
            id: "tpulint-config-watcher".to_string(),
            method: "workspace/didChangeWatchedFiles".to_string(),
            register_options: serde_json::to_value(DidChangeWatchedFilesRegistrationOptions {
                watchers,
            })
            .ok(),
        };
        if let Err(error) = self.client.register_capability(vec![registration]).await {
            self.log(
                LogLevel::Warn,
                format!("could not watch configuration files: {error}"),
            )
            .await;
        }
    }

    /// After a settings change: re-check everything (push) or ask the client to pull again.
    pub(super) async fn refresh_all(&self) {
        let negotiated = self.session.negotiated();
        if negotiated.pull_diagnostics {
            if negotiated.workspace_diagnostic_refresh {
                self.session.request_refresh().await;
            }
        } else {
            // Text documents and notebooks alike.
            for uri in self.session.open_uris() {
                self.schedule(&uri);
            }
        }
    }

    pub(super) async fn on_did_change_configuration(&self, params: DidChangeConfigurationParams) {
        let ticket = self.settings_ticket();
        let value = match self.pull_client_settings().await {
            Some(value) => value,
            None => params.settings,
        };
        if self.apply_client_settings(&value, ticket).await {
            self.refresh_all().await;
        }
    }

    pub(super) async fn on_did_change_workspace_folders(
        &self,
        params: DidChangeWorkspaceFoldersParams,
    ) {
        let removed: Vec<PathBuf> = params
            .event
            .removed
            .iter()
            .filter_map(|folder| file_path(&folder.uri))
            .collect();
        let added: Vec<PathBuf> = params
            .event
            .added
            .iter()
            .filter_map(|folder| file_path(&folder.uri))
            .collect();
        self.session.update_config(|config| {
            config.roots.retain(|root| !removed.contains(root));
            config.roots.extend(added);
            config.projects = Arc::new(Projects::new(&config.roots, &config.client));
        });
        self.refresh_all().await;
    }

    pub(super) async fn on_did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        if params.changes.iter().any(|change| {
            file_path(&change.uri).is_some_and(|path| crate::runtime::is_trace_file(&path))
        }) {
            crate::runtime::invalidate();
            self.refresh_all().await;
        }
        if params
            .changes
            .iter()
            .any(|change| is_config_file(&change.uri))
        {
            self.reload_projects();
            self.refresh_all().await;
        }
    }
}
