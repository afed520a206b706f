//! Which Python to check: `--python`, then `$VIRTUAL_ENV`, then `.venv`/`venv` walking up from the
//! project directory, then `python3` on `PATH` — the order a user would expect their code to run in.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Where the interpreter came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InterpreterSource {
    /// `--python PATH` (or the LSP/extension setting).
    Flag,
    /// `$VIRTUAL_ENV/bin/python`.
    VirtualEnv,
    /// `.venv/bin/python` or `venv/bin/python` in the project or a parent directory.
    ProjectVenv,
    /// `python3` found on `PATH`.
    Path,
}

impl InterpreterSource {
    pub fn describe(self) -> &'static str {
        match self {
            Self::Flag => "--python",
            Self::VirtualEnv => "$VIRTUAL_ENV",
            Self::ProjectVenv => "project virtual environment",
            Self::Path => "python3 on PATH",
        }
    }
}

/// The chosen interpreter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Interpreter {
    pub path: PathBuf,
    pub source: InterpreterSource,
}

/// Why no usable interpreter was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoveryProblem {
    /// The path does not exist.
    Missing {
        path: PathBuf,
        source: InterpreterSource,
    },
    /// It exists but is not an executable file.
    NotExecutable {
        path: PathBuf,
        source: InterpreterSource,
    },
    /// Nothing given and nothing found.
    NoneFound,
}

/// Inputs of discovery, separated from the process environment so tests can set them.
#[derive(Debug, Clone, Default)]
pub struct DiscoveryInputs<'a> {
    pub explicit: Option<&'a Path>,
    pub virtual_env: Option<&'a Path>,
    pub project_dir: Option<&'a Path>,
    pub path_var: Option<&'a OsStr>,
}

/// A stale `$VIRTUAL_ENV` is reported but does not stop discovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    pub result: Result<Interpreter, DiscoveryProblem>,
    /// `$VIRTUAL_ENV` was set but holds no interpreter.
    pub stale_virtual_env: Option<PathBuf>,
}

/// Finds the interpreter to check.
pub fn discover(inputs: &DiscoveryInputs<'_>) -> Discovery {
    if let Some(explicit) = inputs.explicit {
        // A virtual environment directory is accepted in place of its interpreter.
        let path = if explicit.is_dir() {
            venv_python(explicit)
        } else {
            explicit.to_path_buf()
        };
        return Discovery {
            result: check(path, InterpreterSource::Flag),
            stale_virtual_env: None,
        };
    }
    let mut stale_virtual_env = None;
    if let Some(venv) = inputs
        .virtual_env
        .filter(|venv| !venv.as_os_str().is_empty())
    {
        let path = venv_python(venv);
        match check(path, InterpreterSource::VirtualEnv) {
            Ok(found) => {
                return Discovery {
                    result: Ok(found),
                    stale_virtual_env: None,
                };
            }
            Err(_) => stale_virtual_env = Some(venv.to_path_buf()),
        }
    }
    if let Some(project) = inputs.project_dir {
        for directory in project.ancestors() {
            for name in [".venv", "venv"] {
                let candidate = venv_python(&directory.join(name));
                if is_executable_file(&candidate) {
                    return Discovery {
                        result: Ok(Interpreter {
                            path: candidate,
                            source: InterpreterSource::ProjectVenv,
                        }),
                        stale_virtual_env,
                    };
                }
            }
        }
    }
    if let Some(path_var) = inputs.path_var {
        for directory in std::env::split_paths(path_var) {
            let candidate = directory.join("python3");
            if is_executable_file(&candidate) {
                return Discovery {
                    result: Ok(Interpreter {
                        path: candidate,
                        source: InterpreterSource::Path,
                    }),
                    stale_virtual_env,
                };
            }
        }
    }
    Discovery {
        result: Err(DiscoveryProblem::NoneFound),
        stale_virtual_env,
    }
}

fn venv_python(venv: &Path) -> PathBuf {
    let python = venv.join("bin").join("python");
    if python.exists() {
        python
    } else {
        venv.join("bin").join("python3")
    }
}

fn check(path: PathBuf, source: InterpreterSource) -> Result<Interpreter, DiscoveryProblem> {
    if !path.exists() {
        return Err(DiscoveryProblem::Missing { path, source });
    }
    if !is_executable_file(&path) {
        return Err(DiscoveryProblem::NotExecutable { path, source });
    }
    Ok(Interpreter { path, source })
}

/// A regular file (after following links) that this user may execute.
pub fn is_executable_file(path: &Path) -> bool {
    path.is_file() && rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_ok()
}
