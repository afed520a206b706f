//! The server's state: open documents, the negotiated client capabilities, and the settings in
//! force; plus the analysis of a document on a snapshot, off the message loop.
//!
//! Ordering rule: every handler that changes a document does so synchronously, under the
//! documents lock, before its first `.await` (tower-lsp-server runs up to four handlers
//! concurrently, so anything after an `.await` may be overtaken). Analyses run on snapshots in
//! `spawn_blocking`; a result is stored and published only if the document's version and the
//! settings generation are still the ones it was computed for, and the publish is queued while
//! the lock is held, so publishes leave in the order their versions were applied.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use tokio::sync::mpsc;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{self as lsp, MessageType, Uri};
use tpulint_ide::document::PreviousCheck;
use tpulint_ide::server::analyze::CheckSettings;

use crate::document::{DocumentSnapshot, TextDocument};
use crate::encoding::PositionEncoding;
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

/// Parses (incrementally when possible) and checks a snapshot (see
/// `tpulint_ide::server::analyze`). Never panics: a panic in a rule is caught and returned as an
/// error.
pub fn analyze(
    snapshot: DocumentSnapshot,
    resolved: Resolved,
    generation: u64,
    unsafe_fixes: bool,
    token: &CancellationToken,
) -> Result<Analysis, AnalysisError> {
    let check_settings = CheckSettings {
        settings: resolved.settings,
        config_file: resolved.config_file,
        generation,
        unsafe_fixes,
    };
    tpulint_ide::server::analyze::analyze(snapshot, check_settings, !*FULL_CHECKS, &|| {
        token.is_cancelled()
    })
}

/// One open document and what the server knows about it.
pub struct DocumentEntry {
    pub document: TextDocument,
    pub language_id: String,
    /// The latest analysis stored (possibly of an older version).
    pub analysis: Option<Arc<Analysis>>,
    /// A push worker is running for this document.
    pub worker_running: bool,
    /// Something changed since the running worker took its snapshot.
    pub dirty: bool,
}

/// A `publishDiagnostics` to send, queued in version order.
pub struct Publish {
    pub uri: Uri,
    pub diagnostics: Vec<lsp::Diagnostic>,
    pub version: Option<i32>,
}

pub struct Session {
    client: Client,
    documents: Mutex<HashMap<Uri, DocumentEntry>>,
    config: RwLock<Arc<ConfigState>>,
    negotiated: RwLock<Negotiated>,
    publisher: mpsc::UnboundedSender<Publish>,
    /// Setting errors already shown, so each is shown once.
    shown_errors: Mutex<std::collections::HashSet<String>>,
    shutting_down: AtomicBool,
    /// Analyses of text documents in flight, one per document, shared by every caller.
    pub scheduler: Scheduler,
}

impl Session {
    pub fn new(client: Client, publisher: mpsc::UnboundedSender<Publish>) -> Session {
        Session {
            client,
            documents: Mutex::new(HashMap::new()),
            config: RwLock::new(Arc::new(ConfigState::default())),
            negotiated: RwLock::new(Negotiated::default()),
            publisher,
            shown_errors: Mutex::new(Default::default()),
            shutting_down: AtomicBool::new(false),
            scheduler: Scheduler::default(),
        }
    }

    /// The documents map. A poisoned lock (a panic while it was held) is recovered: every
    /// mutation under it is a single assignment or map operation, so the map stays consistent.
    pub fn documents(&self) -> MutexGuard<'_, HashMap<Uri, DocumentEntry>> {
        self.documents
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

    /// Queues a publish; called with the documents lock held so publishes keep version order.
    pub fn queue_publish(&self, publish: Publish) {
        // The receiver only goes away when the server stops; nothing is left to tell then.
        let _ = self.publisher.send(publish);
    }

    /// The snapshot and settings an analysis of `uri` needs, or `None` if it is not open.
    /// A configuration file that cannot be used is reported (once) to the user.
    pub fn prepare(&self, uri: &Uri) -> Option<(DocumentSnapshot, Resolved, Arc<ConfigState>)> {
        let config = self.config();
        let (snapshot, language_id) = {
            let documents = self.documents();
            let entry = documents.get(uri)?;
            (entry.document.snapshot(), entry.language_id.clone())
        };
        // Resolving may read configuration files: done outside the documents lock.
        let resolved = config.projects.resolve(uri, &language_id);
        if let Some(error) = &resolved.error {
            self.show_once(
                MessageType::ERROR,
                format!("tpulint: invalid configuration: {error}"),
            );
        }
        Some((snapshot, resolved, config))
    }

    /// Shows `message` to the user unless it was shown before.
    pub fn show_once(&self, kind: MessageType, message: String) {
        if self.first_time_shown(&message) {
            let client = self.client.clone();
            tokio::spawn(async move { client.show_message(kind, message).await });
        }
    }

    /// Stores `analysis` if it is still current (same version, same settings generation) and
    /// keeps its tree for the next incremental parse. Returns whether it was current; when it
    /// is and `publish` is set, its diagnostics are queued for publishing under the same lock.
    pub fn store(
        &self,
        uri: &Uri,
        analysis: &Arc<Analysis>,
        publish: Option<Vec<lsp::Diagnostic>>,
    ) -> bool {
        let generation = self.config().generation;
        let mut documents = self.documents();
        let Some(entry) = documents.get_mut(uri) else {
            return false;
        };
        // Even a result that went stale is worth reusing: the next check compares its text
        // with the current one.
        if generation == analysis.generation
            && let Some(state) = &analysis.incremental
        {
            entry.document.store_check(PreviousCheck {
                text: analysis.text.clone(),
                state: state.clone(),
            });
        }
        if entry.document.version() != analysis.version || generation != analysis.generation {
            return false;
        }
        entry
            .document
            .store_tree(analysis.version, analysis.tree.clone());
        entry.analysis = Some(analysis.clone());
        if let Some(diagnostics) = publish {
            self.queue_publish(Publish {
                uri: uri.clone(),
                diagnostics,
                version: Some(analysis.version),
            });
        }
        true
    }

    /// The stored analysis of `uri` if it matches the current version and settings.
    pub fn current_analysis(&self, uri: &Uri) -> Option<Arc<Analysis>> {
        let generation = self.config().generation;
        let documents = self.documents();
        let entry = documents.get(uri)?;
        entry.analysis.clone().filter(|analysis| {
            analysis.version == entry.document.version() && analysis.generation == generation
        })
    }

    /// The current analysis of `uri`, computing it off the message loop when the stored one is
    /// stale.
    pub async fn analysis_for(
        self: &Arc<Self>,
        uri: &Uri,
        token: &CancellationToken,
    ) -> Result<Arc<Analysis>, AnalysisError> {
        if let Some(analysis) = self.current_analysis(uri) {
            return Ok(analysis);
        }
        // The request's own token is not the run's: the run is shared with every other caller
        // of this revision and stops only when the revision is superseded.
        let _ = token;
        let (snapshot, resolved, config) = self.prepare(uri).ok_or(AnalysisError::Closed)?;
        let analysis = self
            .shared_analysis(uri, snapshot, resolved, &config)
            .await?;
        self.store(uri, &analysis, None);
        Ok(analysis)
    }

    /// The analysis of `snapshot`, shared with every other caller of the same revision (see
    /// [`Scheduler`]).
    pub async fn shared_analysis(
        &self,
        uri: &Uri,
        snapshot: DocumentSnapshot,
        resolved: Resolved,
        config: &ConfigState,
    ) -> Result<Arc<Analysis>, AnalysisError> {
        let generation = config.generation;
        let unsafe_fixes = config.client.unsafe_fixes;
        self.scheduler
            .analysis(uri, snapshot.version, generation, move |token| {
                analyze(snapshot, resolved, generation, unsafe_fixes, &token)
            })
            .await
    }

    pub fn open_uris(&self) -> Vec<Uri> {
        self.documents().keys().cloned().collect()
    }
}
