//! One analysis in flight per document: every caller that needs document `uri` at (version,
//! settings generation) awaits the same run — the push worker, a pull, a hover and a code action
//! for one revision share one analysis — and a run whose revision has been superseded (the
//! document changed, or the settings did) is cancelled instead of finishing for nothing.
//!
//! The first caller of a revision starts the run (on the blocking pool); the rest await its
//! result. If that first caller goes away (a cancelled request), the next waiter starts it again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::OnceCell;
use tower_lsp_server::ls_types::Uri;

use crate::session::{Analysis, AnalysisError, CancellationToken};

type Outcome = Result<Arc<Analysis>, AnalysisError>;

/// The run of one revision.
struct Run {
    version: i32,
    generation: u64,
    result: Arc<OnceCell<Outcome>>,
    /// Cancelled when the revision is superseded.
    token: CancellationToken,
}

#[derive(Default)]
pub struct Scheduler {
    runs: Mutex<HashMap<Uri, Run>>,
}

impl Scheduler {
    fn lock(&self) -> MutexGuard<'_, HashMap<Uri, Run>> {
        // A poisoned lock is recovered: every mutation under it is one map operation.
        self.runs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The shared slot of `uri` at (`version`, `generation`); a run of another revision is
    /// cancelled and replaced.
    fn slot(
        &self,
        uri: &Uri,
        version: i32,
        generation: u64,
    ) -> (Arc<OnceCell<Outcome>>, CancellationToken) {
        let mut runs = self.lock();
        if let Some(run) = runs.get(uri)
            && run.version == version
            && run.generation == generation
        {
            return (run.result.clone(), run.token.clone());
        }
        let run = Run {
            version,
            generation,
            result: Arc::new(OnceCell::new()),
            token: CancellationToken::default(),
        };
        let slot = (run.result.clone(), run.token.clone());
        if let Some(previous) = runs.insert(uri.clone(), run) {
            previous.token.cancel();
        }
        slot
    }

    /// The analysis of `uri` at (`version`, `generation`), computed by `analyze` (given the
    /// run's cancellation token) unless a run of that revision is already in flight or done.
    pub async fn analysis(
        &self,
        uri: &Uri,
        version: i32,
        generation: u64,
        analyze: impl FnOnce(CancellationToken) -> Result<Analysis, AnalysisError> + Send + 'static,
    ) -> Outcome {
        let (result, token) = self.slot(uri, version, generation);
        result
            .get_or_init(|| async move {
                tokio::task::spawn_blocking(move || analyze(token))
                    .await
                    .map_err(|error| AnalysisError::Panicked(error.to_string()))?
                    .map(Arc::new)
            })
            .await
            .clone()
    }

    /// The document changed or closed: its run in flight, if any, is superseded.
    pub fn supersede(&self, uri: &Uri) {
        if let Some(run) = self.lock().remove(uri) {
            run.token.cancel();
        }
    }

    /// The settings changed: every run in flight is superseded.
    pub fn supersede_all(&self) {
        for (_, run) in self.lock().drain() {
            run.token.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::document::TextDocument;
    use crate::project::Resolved;
    use crate::session::analyze;

    fn uri() -> Uri {
        "file:///project/train.py".parse().expect("URI")
    }

    /// An analysis of a small document, counting how often it ran.
    fn counted(
        runs: &Arc<AtomicUsize>,
        version: i32,
    ) -> impl FnOnce(CancellationToken) -> Result<Analysis, AnalysisError> + Send + 'static {
        let runs = runs.clone();
        move |token| {
            runs.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(50));
            let document =
                TextDocument::new("import torch\nx = torch.ones(2).cuda()\n".into(), version);
            let resolved = Resolved {
                settings: Some(Default::default()),
                config_file: None,
                error: None,
            };
            analyze(document.snapshot(), resolved, 0, false, &token)
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn callers_of_one_revision_share_one_run() {
        let scheduler = Arc::new(Scheduler::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let callers: Vec<_> = (0..3)
            .map(|_| {
                let scheduler = scheduler.clone();
                let work = counted(&runs, 1);
                tokio::spawn(async move { scheduler.analysis(&uri(), 1, 0, work).await })
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
        assert!(
            results
                .iter()
                .all(|result| Arc::ptr_eq(result, &results[0]))
        );
        // A later caller of the same revision gets the finished result without a new run.
        scheduler
            .analysis(&uri(), 1, 0, counted(&runs, 1))
            .await
            .expect("analysed");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // A new revision runs again.
        scheduler
            .analysis(&uri(), 2, 0, counted(&runs, 2))
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
                    .analysis(&uri(), 1, 0, move |token| {
                        started.notify_one();
                        // Runs until cancelled (bounded, so a failing test still ends).
                        for _ in 0..500 {
                            if token.is_cancelled() {
                                return Err(AnalysisError::Cancelled);
                            }
                            std::thread::sleep(Duration::from_millis(10));
                        }
                        Err(AnalysisError::Closed)
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
