//! The server's state: the open documents (text documents and notebooks, one [`Index`]), the
//! negotiated client capabilities, and the settings in force; plus the analysis of a document on
//! a snapshot, off the message loop, through the [`Scheduler`].
//!
//! Ordering rule: every handler that changes a document (a text document or a notebook) does so
//! synchronously, under the index lock, before its first `.await` (tower-lsp-server runs up to
//! four handlers concurrently, so anything after an `.await` may be overtaken). Analyses run on
//! snapshots in `spawn_blocking`; a result is stored and published only if the document's
//! revision (a text document's version, a notebook's change counter) and the settings generation
//! are still the ones it was computed for, and the publish is queued while the lock is held, so
//! publishes leave in the order their versions were applied.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use tokio::sync::mpsc;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{self as lsp, MessageType, Uri};
use tpulint_ide::server::analyze::CheckSettings;
use tpulint_ide::server::notebook_analysis::{self, NotebookAnalysis};

use crate::encoding::PositionEncoding;
use crate::index::{DocumentAnalysis, Index, Snapshot};
use crate::project::{Projects, Resolved};
use crate::scheduler::Scheduler;
use crate::settings::ClientSettings;

pub use tpulint_ide::server::capabilities::Negotiated;

/// Everything that decides how a file is checked; replaced as a whole when anything changes.
#[derive(Debug, Clone, Default)]
pub struct ConfigState {
    /// Bumped on every change, so that results computed under older settings are dropped.
    pub generation: u64,
    pub client: ClientSettings,
    /// Workspace folders, as paths.
    pub roots: Vec<PathBuf>,
    /// Built from `roots` and `client`.
    pub projects: Arc<Projects>,
}

/// The local path of a `file:` URI.
pub fn file_path(uri: &Uri) -> Option<PathBuf> {
    if !uri.scheme().as_str().eq_ignore_ascii_case("file") {
        return None;
    }
    uri.to_file_path().map(|path| path.into_owned())
}

pub use tpulint_ide::analysis::Analysis;

pub use tpulint_ide::server::analyze::AnalysisError;

/// The result of a worker's analysis task, or `None` after logging why there is none: a panic
/// inside the engine or a failed task is logged as an error; a cancelled analysis or a closed
/// document is not worth a line.
pub async fn analysis_or_log<T>(
    client: &Client,
    uri: &Uri,
    version: i32,
    outcome: Result<Result<T, AnalysisError>, tokio::task::JoinError>,
) -> Option<T> {
    let message = match outcome {
        Ok(Ok(analysis)) => return Some(analysis),
        Ok(Err(AnalysisError::Cancelled | AnalysisError::Closed)) => return None,
        Ok(Err(AnalysisError::Panicked(message))) => format!(
            "tpulint crashed while checking {} (version {version}): {message}",
            uri.as_str()
        ),
        Err(join_error) => format!("tpulint analysis task failed: {join_error}"),
    };
    client.log_message(MessageType::ERROR, message).await;
    None
}

/// Set when the request that started some work is cancelled (its future dropped), so that
/// blocking work can stop early.
#[derive(Clone, Default)]
pub struct CancellationToken(Arc<AtomicBool>);

impl CancellationToken {
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// A guard that cancels the token when dropped; keep it alive in the request's future.
    pub fn drop_guard(&self) -> CancelOnDrop {
        CancelOnDrop(self.0.clone())
    }
}

pub struct CancelOnDrop(Arc<AtomicBool>);

impl CancelOnDrop {
    /// The work finished; dropping the guard no longer cancels.
    pub fn disarm(self) {
        std::mem::forget(self);
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// `TPULINT_NO_INCREMENTAL=1` checks every revision in full: the baseline of the latency
/// benchmark (`bench/benches/lsp_latency.rs`), and a way to rule incremental checking out.
static FULL_CHECKS: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
    std::env::var_os("TPULINT_NO_INCREMENTAL")
        .is_some_and(|value| value != "0" && !value.is_empty())
});

/// Checks a snapshot: a text document parsed incrementally when possible (see
/// `tpulint_ide::server::analyze`; without `exact`, an incremental tree with a syntax error is
/// checked as it is instead of parsed afresh), a notebook as one module of its code cells (see
/// `tpulint_ide::server::notebook_analysis`; always exact). Never panics: a panic in a rule is
/// caught and returned as an error.
pub fn analyze(
    snapshot: Snapshot,
    check_settings: CheckSettings,
    exact: bool,
    token: &CancellationToken,
) -> Result<DocumentAnalysis, AnalysisError> {
    let cancelled = || token.is_cancelled();
    match snapshot {
        Snapshot::Text { snapshot, .. } => tpulint_ide::server::analyze::analyze(
            snapshot,
            check_settings,
            !*FULL_CHECKS,
            exact,
            &cancelled,
        )
        .map(|analysis| DocumentAnalysis::Text(Arc::new(analysis))),
        Snapshot::Notebook(snapshot) => {
            notebook_analysis::analyze(snapshot, check_settings, &cancelled)
                .map(|analysis| DocumentAnalysis::Notebook(Arc::new(analysis)))
        }
    }
}

/// How a document is checked under `config`, as `resolved` for it.
pub fn check_settings(resolved: Resolved, config: &ConfigState) -> CheckSettings {
    CheckSettings {
        settings: resolved.settings,
        config_file: resolved.config_file,
        generation: config.generation,
        unsafe_fixes: config.client.unsafe_fixes,
    }
}

/// A `publishDiagnostics` to send, queued in version order.
pub struct Publish {
    pub uri: Uri,
    pub diagnostics: Vec<lsp::Diagnostic>,
    pub version: Option<i32>,
}

pub struct Session {
    client: Client,
    index: Mutex<Index>,
    config: RwLock<Arc<ConfigState>>,
    negotiated: RwLock<Negotiated>,
    publisher: mpsc::UnboundedSender<Publish>,
    /// Setting errors already shown, so each is shown once.
    shown_errors: Mutex<std::collections::HashSet<String>>,
    shutting_down: AtomicBool,
    /// `workspace/diagnostic/refresh` requests sent, each counted before it is sent, and
    /// `settle_pull`'s before the exact analysis that decided it is stored: the debug report
    /// shows the count, so a test that sees the exact analysis knows whether a refresh is on its
    /// way rather than sleeping for it.
    refreshes: AtomicUsize,
    /// Publishes queued (`queue_publish`): the debug report shows the count, so a test that sees
    /// a document's worker idle knows how many publishes are on their way.
    publishes: AtomicUsize,
    /// Analyses in flight, one per document (text document or notebook), shared by every caller.
    pub scheduler: Scheduler,
}

impl Session {
    pub fn new(client: Client, publisher: mpsc::UnboundedSender<Publish>) -> Session {
        Session {
            client,
            index: Mutex::new(Index::default()),
            config: RwLock::new(Arc::new(ConfigState::default())),
            negotiated: RwLock::new(Negotiated::default()),
            publisher,
            shown_errors: Mutex::new(Default::default()),
            shutting_down: AtomicBool::new(false),
            refreshes: AtomicUsize::new(0),
            publishes: AtomicUsize::new(0),
            scheduler: Scheduler::default(),
        }
    }

    /// The document index. A poisoned lock (a panic while it was held) is recovered: every
    /// mutation under it is a single assignment or map operation, so the index stays consistent.
    pub fn index(&self) -> MutexGuard<'_, Index> {
        self.index
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn config(&self) -> Arc<ConfigState> {
        self.config
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Replaces the configuration, bumping its generation.
    pub fn update_config(&self, change: impl FnOnce(&mut ConfigState)) -> Arc<ConfigState> {
        let mut guard = self
            .config
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut next = (**guard).clone();
        change(&mut next);
        next.generation = guard.generation + 1;
        *guard = Arc::new(next);
        // Runs under the old settings will be dropped when they finish: stop them now.
        self.scheduler.supersede_all();
        guard.clone()
    }

    pub fn negotiated(&self) -> Negotiated {
        self.negotiated
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    pub fn set_negotiated(&self, negotiated: Negotiated) {
        *self
            .negotiated
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = negotiated;
    }

    pub fn encoding(&self) -> PositionEncoding {
        self.negotiated().encoding
    }

    /// Whether `message` has not been shown before (and records that it now has).
    pub fn first_time_shown(&self, message: &str) -> bool {
        self.shown_errors
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(message.to_string())
    }

    pub fn set_shutting_down(&self) {
        self.shutting_down.store(true, Ordering::Relaxed);
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Relaxed)
    }

    /// Queues a publish; called with the index lock held so publishes keep version order.
    pub fn queue_publish(&self, publish: Publish) {
        self.publishes.fetch_add(1, Ordering::SeqCst);
        // The receiver only goes away when the server stops; nothing is left to tell then.
        let _ = self.publisher.send(publish);
    }

    /// How many publishes have been queued (see `publishes`).
    pub fn publishes_queued(&self) -> usize {
        self.publishes.load(Ordering::SeqCst)
    }

    /// The snapshot and settings an analysis of document `uri` (a text document or a notebook)
    /// needs, or `None` if it is not open. A configuration file that cannot be used is reported
    /// (once) to the user.
    pub fn prepare(&self, uri: &Uri) -> Option<(Snapshot, CheckSettings)> {
        let config = self.config();
        let snapshot = self.index().snapshot(uri)?;
        Some(self.with_settings(uri, snapshot, config))
    }

    /// As [`Session::prepare`], for document `uri`'s push worker: its mark (`dirty`) is cleared
    /// under the same lock the snapshot is taken under. Cleared earlier, a change landing in
    /// between would be both in this snapshot and marked, and the worker would check and publish
    /// the same revision twice; cleared later, a change could be lost.
    pub fn prepare_for_worker(&self, uri: &Uri) -> Option<(Snapshot, CheckSettings)> {
        let config = self.config();
        let snapshot = {
            let mut index = self.index();
            index.get_mut(uri)?.dirty = false;
            index.snapshot(uri)?
        };
        Some(self.with_settings(uri, snapshot, config))
    }

    /// `snapshot` with the settings of its project under `config`.
    fn with_settings(
        &self,
        uri: &Uri,
        snapshot: Snapshot,
        config: Arc<ConfigState>,
    ) -> (Snapshot, CheckSettings) {
        // Resolving may read configuration files: done outside the index lock. A notebook's own
        // path decides its project configuration.
        let resolved = config.projects.resolve(uri, snapshot.language_id());
        if let Some(error) = &resolved.error {
            self.show_once(
                MessageType::ERROR,
                format!("tpulint: invalid configuration: {error}"),
            );
        }
        (snapshot, check_settings(resolved, &config))
    }

    /// Shows `message` to the user unless it was shown before.
    pub fn show_once(&self, kind: MessageType, message: String) {
        if self.first_time_shown(&message) {
            let client = self.client.clone();
            tokio::spawn(async move { client.show_message(kind, message).await });
        }
    }

    /// The publishes of `analysis` of document `uri`: one for a text document (with its runtime
    /// findings, which may read a trace file: call this outside the index lock), one per cell
    /// for a notebook.
    pub fn publishes(&self, uri: &Uri, analysis: &DocumentAnalysis) -> Vec<Publish> {
        let encoding = self.encoding();
        match analysis {
            DocumentAnalysis::Text(analysis) => vec![Publish {
                uri: uri.clone(),
                diagnostics: crate::runtime::lsp_diagnostics(analysis, uri, encoding),
                version: Some(analysis.version),
            }],
            DocumentAnalysis::Notebook(analysis) => analysis
                .cells
                .iter()
                .map(|cell| Publish {
                    uri: cell.uri.clone(),
                    diagnostics: analysis.cell_diagnostics(&cell.uri, encoding),
                    version: Some(cell.cell_version),
                })
                .collect(),
        }
    }

    /// Stores `analysis` of document `uri` if it is still current (same revision, same
    /// settings generation); when it is, `publishes` are queued under the same lock, so they
    /// leave in revision order. Returns `None` for a stale result, else what
    /// [`Index::store`] returns (a notebook worker's previous result).
    pub fn store(
        &self,
        uri: &Uri,
        analysis: &DocumentAnalysis,
        publishes: Vec<Publish>,
        from_worker: bool,
    ) -> Option<Option<Arc<NotebookAnalysis>>> {
        let generation = self.config().generation;
        let mut index = self.index();
        let stored = index.store(uri, analysis, generation, from_worker)?;
        for publish in publishes {
            self.queue_publish(publish);
        }
        Some(stored)
    }

    /// The current exact analysis of document `uri` (a text document or a notebook): what
    /// requests (pulls, code actions and their fixes, hover, commands) are answered from, so
    /// that they see what `tpulint check` sees. Computed off the message loop when the stored
    /// one is stale or not exact, and shared with every other caller of the same revision (see
    /// [`Scheduler`]): first the quick run the push worker shares, which is exact unless its
    /// tree has a syntax error, then, only in that case, the exact run.
    pub async fn analysis_for(
        self: &Arc<Self>,
        uri: &Uri,
        token: &CancellationToken,
    ) -> Result<DocumentAnalysis, AnalysisError> {
        // The request's own token is not the run's: the run is shared with every other caller
        // of this revision and stops only when the revision is superseded.
        let _ = token;
        let mut exact = false;
        loop {
            let current = self.index().current_analysis(uri, self.config().generation);
            if let Some(analysis) = current {
                if analysis.is_exact() {
                    return Ok(analysis);
                }
                exact = true;
            }
            let (snapshot, check_settings) = self.prepare(uri).ok_or(AnalysisError::Closed)?;
            let analysis = self
                .shared_analysis(uri, snapshot, check_settings, exact)
                .await?;
            self.store(uri, &analysis, Vec::new(), false);
            if analysis.is_exact() {
                return Ok(analysis);
            }
            exact = true;
        }
    }

    /// The analysis a pull (`textDocument/diagnostic`) of document `uri` is answered from. For a
    /// client that takes refreshes (`workspace/diagnostic/refresh`), a text document is answered
    /// at once from its quick analysis (see [`analyze`]) when no exact one of its revision is in
    /// yet, and the exact analysis then runs off the request path ([`Session::settle_pull`]),
    /// asking the client to pull again if its diagnostics differ. Any other client, and every
    /// notebook, gets [`Session::analysis_for`]: exact only.
    pub async fn pull_analysis_for(
        self: &Arc<Self>,
        uri: &Uri,
        token: &CancellationToken,
    ) -> Result<DocumentAnalysis, AnalysisError> {
        let is_text = matches!(
            self.index().key(uri),
            Some(crate::index::DocumentKey::Text(_))
        );
        if !is_text || !self.negotiated().workspace_diagnostic_refresh {
            return self.analysis_for(uri, token).await;
        }
        let current = self.index().current_analysis(uri, self.config().generation);
        let analysis = match current {
            Some(analysis) => analysis,
            None => {
                let (snapshot, check_settings) = self.prepare(uri).ok_or(AnalysisError::Closed)?;
                // The quick run, shared with any other caller of this revision.
                let analysis = self
                    .shared_analysis(uri, snapshot, check_settings, false)
                    .await?;
                self.store(uri, &analysis, Vec::new(), false);
                analysis
            }
        };
        // Also when the quick analysis was stored before (by an earlier pull, or by a request
        // whose exact run was dropped with it): the exact run is shared, so this starts it only
        // if none is in flight.
        if let DocumentAnalysis::Text(quick) = &analysis
            && !quick.exact
        {
            let session = self.clone();
            let uri = uri.clone();
            let quick = quick.clone();
            tokio::spawn(async move { session.settle_pull(uri, quick).await });
        }
        Ok(analysis)
    }

    /// The exact analysis of text document `uri` after a pull was answered from `quick` (not
    /// exact), in the scheduler's exact slot: stored, and if its diagnostics differ from the
    /// ones answered, the client is asked to pull again (it then
    /// gets the exact report, whose result id differs from the quick one's). Does nothing when
    /// the document has changed since (the client pulls again for its edit); an edit during the
    /// run cancels it (`Scheduler::supersede`).
    async fn settle_pull(self: Arc<Self>, uri: Uri, quick: Arc<Analysis>) {
        let Some((snapshot, check_settings)) = self.prepare(&uri) else {
            return;
        };
        if snapshot.revision() != quick.version || check_settings.generation != quick.generation {
            return;
        }
        let outcome = self
            .shared_analysis(&uri, snapshot, check_settings, true)
            .await;
        let Some(analysis) = analysis_or_log(&self.client, &uri, quick.version, Ok(outcome)).await
        else {
            return;
        };
        let DocumentAnalysis::Text(exact) = &analysis else {
            return;
        };
        let encoding = self.encoding();
        let differs = crate::runtime::lsp_diagnostics(exact, &uri, encoding)
            != crate::runtime::lsp_diagnostics(&quick, &uri, encoding);
        // Counted before the store makes the exact analysis visible (see `refreshes`).
        if differs {
            self.refreshes.fetch_add(1, Ordering::SeqCst);
        }
        self.store(&uri, &analysis, Vec::new(), false);
        // Also sent when an edit overtook the store, since it was counted: the client only pulls
        // once more, which it does after its edit anyway. A client that refuses still pulls on
        // its next edit.
        if differs {
            let _ = self.client.workspace_diagnostic_refresh().await;
        }
    }

    /// How many `workspace/diagnostic/refresh` requests the server has sent or decided to send
    /// (see `refreshes`).
    pub fn refreshes(&self) -> usize {
        self.refreshes.load(Ordering::SeqCst)
    }

    /// Asks the client to pull diagnostics again. A client that refuses still pulls on its
    /// next edit, so the answer is not awaited for anything.
    pub async fn request_refresh(&self) {
        self.refreshes.fetch_add(1, Ordering::SeqCst);
        let _ = self.client.workspace_diagnostic_refresh().await;
    }

    /// The analysis of `snapshot` of document `uri`, exact or quick (see [`analyze`]), shared
    /// with every other caller of the same revision (see [`Scheduler`]).
    pub async fn shared_analysis(
        &self,
        uri: &Uri,
        snapshot: Snapshot,
        check_settings: CheckSettings,
        exact: bool,
    ) -> Result<DocumentAnalysis, AnalysisError> {
        self.scheduler
            .analysis(
                uri,
                snapshot.revision(),
                check_settings.generation,
                exact,
                move |token| analyze(snapshot, check_settings, exact, &token),
            )
            .await
    }

    /// The open documents (text documents and notebooks), by URI.
    pub fn open_uris(&self) -> Vec<Uri> {
        self.index().uris()
    }

    /// Closes document `uri` (with the cell documents the client closes with a notebook): its
    /// run in flight is superseded and, in push mode, the diagnostics of the document (or of
    /// every cell) are cleared, queued under the lock after any publish of its last revision.
    pub fn close(&self, uri: &Uri, closed_cells: Vec<Uri>) {
        let mut index = self.index();
        self.scheduler.supersede(uri);
        if let Some(cleared) = index.remove_closing(uri, closed_cells) {
            self.clear(cleared);
        }
    }

    /// Clears the diagnostics of `uris` (push mode only: a pull client drops what it pulled for
    /// a closed document itself). Call it with the index lock held.
    pub fn clear(&self, uris: Vec<Uri>) {
        if self.negotiated().pull_diagnostics {
            return;
        }
        for uri in uris {
            self.queue_publish(Publish {
                uri,
                diagnostics: Vec::new(),
                version: None,
            });
        }
    }
}
