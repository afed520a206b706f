//! `initialize`, `initialized`, `shutdown`, and the task that sends queued publishes in order.

use super::*;

impl Server {
    pub(super) async fn on_initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let negotiated = capabilities::negotiate(
            &serde_json::to_value(&params.capabilities).unwrap_or_default(),
        );
        self.session.set_negotiated(negotiated.clone());
        if let Some(queue) = self
            .publish_queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
        {
            tokio::spawn(run_publisher(self.client.clone(), queue));
        }

        #[allow(deprecated)] // `root_uri` is the fallback for clients without workspace folders.
        let mut roots: Vec<PathBuf> = params
            .workspace_folders
            .iter()
            .flatten()
            .filter_map(|folder| file_path(&folder.uri))
            .collect();
        #[allow(deprecated)]
        if roots.is_empty()
            && let Some(root) = params.root_uri.as_ref().and_then(file_path)
        {
            roots.push(root);
        }
        let (client_settings, errors) = params
            .initialization_options
            .as_ref()
            .map(ClientSettings::from_json)
            .unwrap_or_default();
        self.session.update_config(|config| {
            config.projects = Arc::new(Projects::new(&roots, &client_settings));
            config.roots = roots;
            config.client = client_settings;
        });
        self.pending_errors
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend(errors);

        let result = capabilities::initialize_result(
            &negotiated,
            &capabilities::commands(true),
            "tpulint",
            env!("CARGO_PKG_VERSION"),
        );
        serde_json::from_str(&result).map_err(|error| {
            internal_error(format!("the server's capabilities do not parse: {error}"))
        })
    }

    pub(super) async fn on_initialized(&self, _params: InitializedParams) {
        let ticket = self.settings_ticket();
        let errors = std::mem::take(
            &mut *self
                .pending_errors
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        self.report_setting_errors(errors).await;
        self.register_config_watchers().await;
        if let Some(value) = self.pull_client_settings().await
            && self.apply_client_settings(&value, ticket).await
        {
            self.refresh_all().await;
        }
        self.log(LogLevel::Info, "tpulint server ready").await;
    }

    pub(super) async fn on_shutdown(&self) -> Result<()> {
        self.session.set_shutting_down();
        Ok(())
    }
}

/// Sends queued publishes one at a time, in the order they were queued.
pub(super) async fn run_publisher(client: Client, mut queue: mpsc::UnboundedReceiver<Publish>) {
    while let Some(publish) = queue.recv().await {
        client
            .publish_diagnostics(publish.uri, publish.diagnostics, publish.version)
            .await;
    }
}
