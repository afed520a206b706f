//! The start-up hook `tpulint trace run` injects: a `sitecustomize.py` in a fresh directory put
//! first on `PYTHONPATH`, and the environment that turns on PyTorch/XLA's and Dynamo's logs.

use std::path::{Path, PathBuf};

/// The hook's source.
pub const SITECUSTOMIZE: &str = include_str!("sitecustomize.py");

/// Files of one traced run, all inside `directory` (a fresh temporary directory).
#[derive(Debug, Clone)]
pub struct RunFiles {
    pub directory: PathBuf,
}

impl RunFiles {
    pub fn hook_directory(&self) -> PathBuf {
        self.directory.join("hook")
    }
    /// `PT_XLA_DEBUG_FILE` (opened in append mode by torch_xla, so it must start absent).
    pub fn debug_file(&self) -> PathBuf {
        self.directory.join("pt_xla_debug.txt")
    }
    /// `TORCH_LOGS_OUT`.
    pub fn torch_logs_file(&self) -> PathBuf {
        self.directory.join("torch_logs.txt")
    }
    /// `TORCH_XLA` counters and coverage, one `hook-<pid>.json` per process.
    pub fn hook_output(&self) -> PathBuf {
        self.directory.join("hook-out")
    }

    /// Writes the hook.
    pub fn install(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(self.hook_directory())?;
        std::fs::create_dir_all(self.hook_output())?;
        std::fs::write(
            self.hook_directory().join("sitecustomize.py"),
            SITECUSTOMIZE,
        )
    }

    /// The variables to set for the traced command. `existing_pythonpath` is kept after the
    /// hook's directory; `coverage` records the project lines that ran.
    pub fn environment(
        &self,
        root: &Path,
        existing_pythonpath: Option<&std::ffi::OsStr>,
        existing_torch_logs: Option<&str>,
        coverage: bool,
    ) -> Vec<(String, std::ffi::OsString)> {
        let mut pythonpath = self.hook_directory().into_os_string();
        if let Some(existing) = existing_pythonpath.filter(|value| !value.is_empty()) {
            pythonpath.push(if cfg!(windows) { ";" } else { ":" });
            pythonpath.push(existing);
        }
        let mut torch_logs: Vec<String> = existing_torch_logs
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(str::to_string)
            .collect();
        for wanted in ["recompiles", "graph_breaks"] {
            if !torch_logs
                .iter()
                .any(|part| part.trim_start_matches(['+', '-']) == wanted)
            {
                torch_logs.push(wanted.to_string());
            }
        }
        vec![
            ("PYTHONPATH".into(), pythonpath),
            // Level 2 adds execution analyses to compilation analyses; PT_XLA_DEBUG=1 adds the
            // `pt-xla-profiler:` lines and, at exit, the fallback sites ("Unlowered Op usage
            // summary").
            ("PT_XLA_DEBUG".into(), "1".into()),
            ("PT_XLA_DEBUG_LEVEL".into(), "2".into()),
            ("PT_XLA_DEBUG_MAX_FRAME".into(), "32".into()),
            (
                "PT_XLA_DEBUG_FILE".into(),
                self.debug_file().into_os_string(),
            ),
            ("TORCH_LOGS".into(), torch_logs.join(",").into()),
            (
                "TORCH_LOGS_OUT".into(),
                self.torch_logs_file().into_os_string(),
            ),
            (
                "TPULINT_TRACE_OUT".into(),
                self.hook_output().into_os_string(),
            ),
            ("TPULINT_TRACE_ROOT".into(), root.as_os_str().to_owned()),
            (
                "TPULINT_TRACE_COVERAGE".into(),
                if coverage { "1" } else { "0" }.into(),
            ),
        ]
    }

    /// Every log the run produced: the debug file, Dynamo's log, each process's hook dump.
    pub fn logs(&self) -> Vec<PathBuf> {
        let mut logs = Vec::new();
        for path in [self.debug_file(), self.torch_logs_file()] {
            if path.is_file() {
                logs.push(path);
            }
        }
        if let Ok(entries) = std::fs::read_dir(self.hook_output()) {
            let mut dumps: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|e| e == "json"))
                .collect();
            dumps.sort();
            logs.extend(dumps);
        }
        logs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_keeps_pythonpath_and_torch_logs() {
        let files = RunFiles {
            directory: PathBuf::from("/tmp/run"),
        };
        let env = files.environment(
            Path::new("/p"),
            Some(std::ffi::OsStr::new("/mine")),
            Some("+dynamo,recompiles"),
            true,
        );
        let get = |key: &str| {
            env.iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(get("PYTHONPATH").as_deref(), Some("/tmp/run/hook:/mine"));
        assert_eq!(
            get("TORCH_LOGS").as_deref(),
            Some("+dynamo,recompiles,graph_breaks")
        );
        assert_eq!(get("TPULINT_TRACE_COVERAGE").as_deref(), Some("1"));
    }
}
