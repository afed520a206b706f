//! `workspace/executeCommand`: fix-all through `workspace/applyEdit`, the environment check, the
//! debug report.

use super::*;

impl Server {
    pub(super) async fn apply_autofix(&self, arguments: Vec<Value>) -> Result<Option<Value>> {
        let uri = handlers::autofix_target(&arguments).map_err(rpc_error)?;
        let token = CancellationToken::default();
        let guard = token.drop_guard();
        let encoding = self.session.encoding();
        // On a notebook cell the command fixes the whole notebook.
        let fix: Box<dyn FnOnce() -> Option<WorkspaceEdit> + Send> =
            match self.request_target(&uri, &token).await? {
                Some(Target::Cell(analysis)) => {
                    Box::new(move || notebook_analysis::fix_all_edit(&analysis, None, encoding))
                }
                Some(Target::Text(analysis)) => {
                    let uri_for_fix = uri.clone();
                    Box::new(move || handlers::text_fix_all(&uri_for_fix, &analysis, encoding))
                }
                None => return Err(rpc_error(handlers::not_open(&uri))),
            };
        let edit = tokio::task::spawn_blocking(fix)
            .await
            .map_err(|error| internal_error(format!("fixing crashed: {error}")))?;
        guard.disarm();
        if let Some(edit) = edit {
            let applied =
                self.client.apply_edit(edit).await.map_err(|error| {
                    internal_error(format!("workspace/applyEdit failed: {error}"))
                })?;
            if !applied.applied {
                self.log(
                    LogLevel::Warn,
                    handlers::edit_not_applied(applied.failure_reason.as_deref()),
                )
                .await;
            }
        }
        Ok(None)
    }

    /// Runs the environment check (seconds: it imports torch in the chosen interpreter) off the
    /// message loop. Arguments: `[{"interpreter": "/path/to/python"}]`, or none for discovery
    /// from the first workspace folder.
    pub(super) async fn check_environment(&self, arguments: Vec<Value>) -> Result<Option<Value>> {
        let interpreter = arguments
            .first()
            .and_then(|argument| argument.get("interpreter"))
            .and_then(Value::as_str)
            .filter(|path| !path.is_empty())
            .map(PathBuf::from);
        let project_dir = self
            .session
            .config()
            .roots
            .first()
            .cloned()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let report = tokio::task::spawn_blocking(move || {
            let mut options = tpulint_doctor::DoctorOptions::from_process_env(project_dir);
            options.python = interpreter;
            environment_report(&tpulint_doctor::run(&options))
        })
        .await
        .map_err(|error| internal_error(format!("the environment check crashed: {error}")))?;
        Ok(Some(report))
    }

    pub(super) fn debug_information(&self) -> String {
        let config = self.session.config();
        let negotiated = self.session.negotiated();
        let (started, cancelled) = self.session.scheduler.counts();
        let index = self.session.index();
        let mut out = String::new();
        out.push_str(&format!("tpulint server {}\n", env!("CARGO_PKG_VERSION")));
        out.push_str(&format!("position encoding: {:?}\n", negotiated.encoding));
        out.push_str(&format!(
            "diagnostics: {}\n",
            if negotiated.pull_diagnostics {
                "pull"
            } else {
                "push"
            }
        ));
        out.push_str(&format!("settings generation: {}\n", config.generation));
        out.push_str(&format!(
            "analyses: {started} started, {cancelled} cancelled in flight\n"
        ));
        out.push_str(&format!(
            "diagnostic refreshes sent: {}\n",
            self.session.refreshes()
        ));
        out.push_str(&format!(
            "publishes queued: {}\n",
            self.session.publishes_queued()
        ));
        out.push_str(&format!("editor settings: {:?}\n", config.client));
        for root in &config.roots {
            out.push_str(&format!("workspace folder: {}\n", root.display()));
        }
        let entries = index.entries();
        let notebooks: Vec<_> = entries
            .iter()
            .filter_map(|(uri, entry)| match &entry.document {
                Document::Notebook(notebook) => Some(notebook.describe(uri)),
                Document::Text(_) => None,
            })
            .collect();
        out.push_str(&format!("open notebooks: {}\n", notebooks.len()));
        out.extend(notebooks);
        let texts: Vec<_> = entries
            .iter()
            .filter_map(|(uri, entry)| match &entry.document {
                Document::Text(text) => Some((uri, text, entry.worker_running)),
                Document::Notebook(_) => None,
            })
            .collect();
        out.push_str(&format!("open documents: {}\n", texts.len()));
        for (uri, entry, worker_running) in texts {
            let analysis = entry.analysis.as_ref();
            // "analysis: quick" is one of an incremental re-parse with a syntax error, published
            // (or answered to a pull client that takes refreshes) at once and replaced by the
            // exact one (`documents::push_worker`, `Session::pull_analysis_for`).
            out.push_str(&format!(
                "  {} (version {}, {} diagnostics, analysis: {}, worker: {}, configuration: {})\n",
                uri.as_str(),
                entry.document.version(),
                analysis.map_or(0, |analysis| analysis.diagnostics.len()),
                match analysis {
                    None => "none".to_string(),
                    Some(analysis) if analysis.exact => "exact".to_string(),
                    Some(_) => "quick".to_string(),
                },
                if worker_running { "running" } else { "idle" },
                analysis
                    .and_then(|analysis| analysis.config_file.as_ref())
                    .map_or("defaults".to_string(), |path| path.display().to_string())
            ));
        }
        out
    }

    pub(super) async fn on_execute_command(
        &self,
        params: ExecuteCommandParams,
    ) -> Result<Option<Value>> {
        let Some(command) = SupportedCommand::from_identifier(&params.command) else {
            return Err(rpc_error(handlers::unknown_command(
                &params.command,
                &capabilities::commands(true),
            )));
        };
        match command {
            SupportedCommand::ApplyAutofix => self.apply_autofix(params.arguments).await,
            SupportedCommand::CheckEnvironment => self.check_environment(params.arguments).await,
            SupportedCommand::PrintDebugInformation => {
                Ok(Some(Value::String(self.debug_information())))
            }
        }
    }
}

/// The answer to `tpulint.checkEnvironment`: a verdict, a one-line summary, the Markdown report,
/// the suggested shell commands, and the full JSON report.
pub(super) fn environment_report(report: &tpulint_doctor::Report) -> Value {
    use tpulint_doctor::{OutputFormat, render};
    // The doctor's JSON spelling (`ready` / `degraded` / `not_ready`), which the extension reads.
    let verdict = serde_json::to_value(report.verdict).unwrap_or(Value::Null);
    // Each fix names its finding and the finding's page in docs/doctor.md.
    let fixes: Vec<Value> = report
        .findings
        .iter()
        .flat_map(|finding| finding.fixes.iter().map(move |fix| (finding, fix)))
        .filter(|(_, fix)| !fix.commands.is_empty())
        .map(|(finding, fix)| {
            json!({
                "title": fix.description,
                "command": fix.commands.join(" && "),
                "finding": finding.id,
                "url": finding.url,
            })
        })
        .collect();
    json!({
        "verdict": verdict,
        "summary": report.summary_line(),
        "markdown": render(report, OutputFormat::Markdown),
        "fixes": fixes,
        "report": serde_json::to_value(report).unwrap_or(Value::Null),
    })
}
