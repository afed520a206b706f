//! One analysis in flight per document, text document or notebook alike: every caller that needs
//! document `uri` at (revision, settings generation) awaits the same run — the push worker, a
//! pull, a hover and a code action for one revision share one analysis — and a run whose
//! revision has been superseded (the document changed or closed, or the settings changed) is
//! cancelled instead of finishing for nothing.
//!
//! A text document's revision has two runs: the quick one, which checks an incremental re-parse
//! even when it has a syntax error (what the push worker publishes at once), and the exact one,
//! which parses such a text afresh (what requests are answered from, and what the push worker
//! publishes next if it differs); see `Session::analysis_for` and `documents::push_worker`. They
//! are separate slots, superseded together.
//!
//! The first caller of a revision starts the run (on the blocking pool); the rest await its
//! result. If that first caller goes away (a cancelled request), the next waiter starts it again.
//! The counts of runs started and of runs cancelled in flight are shown in the server's debug
//! report (`tpulint.printDebugInformation`), which is how the protocol tests see the sharing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::OnceCell;
use tower_lsp_server::ls_types::Uri;

use crate::index::DocumentAnalysis;
use crate::session::{AnalysisError, CancellationToken};

type Outcome = Result<DocumentAnalysis, AnalysisError>;

/// The run of one revision.
struct Run {
    revision: i32,
    generation: u64,
    result: Arc<OnceCell<Outcome>>,
    /// Cancelled when the revision is superseded.
    token: CancellationToken,
}

impl Run {
    /// Cancels the run; counts it if it had not finished.
    fn cancel(self, cancelled: &AtomicU64) {
        if !self.result.initialized() {
            cancelled.fetch_add(1, Ordering::Relaxed);
        }
        self.token.cancel();
    }
}

#[derive(Default)]
pub struct Scheduler {
    /// Keyed by document and exactness (`true`: the exact run).
    runs: Mutex<HashMap<(Uri, bool), Run>>,
    /// Analyses started.
    started: AtomicU64,
    /// Runs superseded before they finished.
    cancelled: AtomicU64,
}

impl Scheduler {
    fn lock(&self) -> MutexGuard<'_, HashMap<(Uri, bool), Run>> {
        // A poisoned lock is recovered: every mutation under it is one map operation.
        self.runs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The shared slot of `uri` at (`revision`, `generation`), exact or not; a run of another
    /// revision is cancelled and replaced.
    fn slot(
        &self,
        uri: &Uri,
        revision: i32,
        generation: u64,
        exact: bool,
    ) -> (Arc<OnceCell<Outcome>>, CancellationToken) {
        let mut runs = self.lock();
        let key = (uri.clone(), exact);
        if let Some(run) = runs.get(&key)
            && run.revision == revision
            && run.generation == generation
        {
            return (run.result.clone(), run.token.clone());
        }
        let run = Run {
            revision,
            generation,
            result: Arc::new(OnceCell::new()),
            token: CancellationToken::default(),
        };
        let slot = (run.result.clone(), run.token.clone());
        if let Some(previous) = runs.insert(key, run) {
            previous.cancel(&self.cancelled);
        }
        slot
    }

    /// The analysis of document `uri` at (`revision`, `generation`), exact or quick, computed by
    /// `analyze` (given the run's cancellation token) unless such a run of that revision is
    /// already in flight or done.
    pub async fn analysis(
        &self,
        uri: &Uri,
        revision: i32,
        generation: u64,
        exact: bool,
        analyze: impl FnOnce(CancellationToken) -> Outcome + Send + 'static,
    ) -> Outcome {
        let (result, token) = self.slot(uri, revision, generation, exact);
        result
            .get_or_init(|| async move {
                self.started.fetch_add(1, Ordering::Relaxed);
                tokio::task::spawn_blocking(move || analyze(token))
                    .await
                    .map_err(|error| AnalysisError::Panicked(error.to_string()))?
            })
            .await
            .clone()
    }

    /// The document changed or closed: its runs in flight, if any, are superseded.
    pub fn supersede(&self, uri: &Uri) {
        let mut runs = self.lock();
        for exact in [false, true] {
            if let Some(run) = runs.remove(&(uri.clone(), exact)) {
                run.cancel(&self.cancelled);
            }
        }
    }

    /// The settings changed: every run in flight is superseded.
    pub fn supersede_all(&self) {
        for (_, run) in self.lock().drain() {
            run.cancel(&self.cancelled);
        }
    }

    /// How many analyses were started, and how many of them were cancelled in flight.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.started.load(Ordering::Relaxed),
            self.cancelled.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::document::TextDocument;
    use crate::index::{Index, Snapshot};
    use crate::session::analyze;
    use tpulint_ide::server::analyze::CheckSettings;

    fn uri() -> Uri {
        "file:///project/train.py".parse().expect("URI")
    }

    fn settings() -> CheckSettings {
        CheckSettings {
            settings: Some(Default::default()),
            ..CheckSettings::default()
        }
    }

    /// A slow analysis that runs until it is cancelled (bounded at 5 s, so a failing test ends).
    fn until_cancelled(token: &CancellationToken) -> Outcome {
        for _ in 0..500 {
            if token.is_cancelled() {
                return Err(AnalysisError::Cancelled);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(AnalysisError::Closed)
    }

    /// An analysis of a small document, counting how often it ran.
    fn counted(
        runs: &Arc<AtomicUsize>,
        version: i32,
    ) -> impl FnOnce(CancellationToken) -> Outcome + Send + 'static {
        let runs = runs.clone();
        move |token| {
            runs.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(50));
            let document =
                TextDocument::new("import torch\nx = torch.ones(2).cuda()\n".into(), version);
            let snapshot = Snapshot::Text {
                snapshot: document.snapshot(),
                language_id: "python".into(),
            };
            analyze(snapshot, settings(), false, &token)
        }
    }

    /// A notebook of one Python cell, opened in an index.
    fn notebook_index(text: &str) -> (Index, Uri) {
        let params = serde_json::from_value(serde_json::json!({
            "notebookDocument": {
                "uri": "file:///project/train.ipynb", "notebookType": "jupyter-notebook",
                "version": 1, "cells": [{"kind": 2, "document": "cell:1"}]
            },
            "cellTextDocuments": [
                {"uri": "cell:1", "languageId": "python", "version": 1, "text": text}
            ]
        }))
        .expect("params");
        let mut index = Index::default();
        let uri = index.open_notebook(params);
        (index, uri)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_notebook_revision_is_one_shared_run_and_a_change_cancels_it() {
        let scheduler = Arc::new(Scheduler::default());
        let (index, notebook) = notebook_index("import torch\nx = torch.ones(2).cuda()\n");
        let callers: Vec<_> = (0..3)
            .map(|_| {
                let scheduler = scheduler.clone();
                let notebook = notebook.clone();
                let snapshot = index.snapshot(&notebook).expect("open");
                tokio::spawn(async move {
                    scheduler
                        .analysis(&notebook, snapshot.revision(), 0, false, move |token| {
                            std::thread::sleep(Duration::from_millis(50));
                            analyze(snapshot, settings(), false, &token)
                        })
                        .await
                })
            })
            .collect();
        for caller in callers {
            let outcome = caller.await.expect("joined").expect("analysed");
            assert!(matches!(outcome, DocumentAnalysis::Notebook(_)));
        }
        assert_eq!(scheduler.counts(), (1, 0), "one run for three callers");

        // A run of the next revision, superseded while it runs, is cancelled and counted.
        let started = Arc::new(tokio::sync::Notify::new());
        let slow = {
            let scheduler = scheduler.clone();
            let started = started.clone();
            let notebook = notebook.clone();
            tokio::spawn(async move {
                scheduler
                    .analysis(&notebook, 1, 0, false, move |token| {
                        started.notify_one();
                        until_cancelled(&token)
                    })
                    .await
            })
        };
        started.notified().await;
        scheduler.supersede(&notebook);
        let outcome = slow.await.expect("joined");
        assert!(matches!(outcome, Err(AnalysisError::Cancelled)));
        assert_eq!(scheduler.counts(), (2, 1));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn callers_of_one_revision_share_one_run() {
        let scheduler = Arc::new(Scheduler::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let callers: Vec<_> = (0..3)
            .map(|_| {
                let scheduler = scheduler.clone();
                let work = counted(&runs, 1);
                tokio::spawn(async move { scheduler.analysis(&uri(), 1, 0, false, work).await })
            })
            .collect();
        let mut results = Vec::new();
        for caller in callers {
            results.push(caller.await.expect("joined").expect("analysed"));
        }
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1,
            "one analysis for three callers"
        );
        assert!(results.iter().all(|result| match (result, &results[0]) {
            (DocumentAnalysis::Text(a), DocumentAnalysis::Text(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }));
        // A later caller of the same revision gets the finished result without a new run.
        scheduler
            .analysis(&uri(), 1, 0, false, counted(&runs, 1))
            .await
            .expect("analysed");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // A new revision runs again.
        scheduler
            .analysis(&uri(), 2, 0, false, counted(&runs, 2))
            .await
            .expect("analysed");
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_superseded_run_is_cancelled() {
        let scheduler = Arc::new(Scheduler::default());
        let started = Arc::new(tokio::sync::Notify::new());
        let slow = {
            let scheduler = scheduler.clone();
            let started = started.clone();
            tokio::spawn(async move {
                scheduler
                    .analysis(&uri(), 1, 0, false, move |token| {
                        started.notify_one();
                        until_cancelled(&token)
                    })
                    .await
            })
        };
        started.notified().await;
        scheduler.supersede(&uri());
        let outcome = slow.await.expect("joined");
        assert!(
            matches!(outcome, Err(AnalysisError::Cancelled)),
            "{:?}",
            outcome.err()
        );
    }
}
