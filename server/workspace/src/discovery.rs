//! File discovery: expands the paths given on the command line into the Python files and Jupyter
//! notebooks to check, walking directories in parallel with the `ignore` crate (so `.gitignore`,
//! `.ignore` and `.git/info/exclude` are honoured), skipping hidden and default-excluded
//! directories and the project's `exclude` patterns. Files named explicitly are always checked,
//! as in ruff, unless `--force-exclude` asks for `exclude` to apply to them too (what a pre-commit
//! hook needs, since pre-commit names every staged file).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ignore::{WalkBuilder, WalkState};

use crate::config::{ConfigError, Project, ProjectResolver, absolute};

/// A file to check and the project (configuration) that governs it.
#[derive(Debug, Clone)]
pub struct DiscoveredFile {
    /// Absolute path.
    pub path: PathBuf,
    pub project: Arc<Project>,
}

/// The outcome of a discovery: files sorted by path, plus the problems met on the way.
#[derive(Debug, Default)]
pub struct Discovery {
    pub files: Vec<DiscoveredFile>,
    /// Configuration files that could not be read or parsed (deduplicated).
    pub config_errors: Vec<ConfigError>,
    /// Paths that do not exist or could not be read while walking.
    pub path_errors: Vec<PathError>,
}

/// A path given or met while walking that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PathError {
    /// The path (absolute), when the error names one.
    pub path: Option<PathBuf>,
    /// One line, e.g. `No such file or directory`.
    pub message: String,
}

impl PathError {
    fn from_walk(error: &ignore::Error) -> PathError {
        match error {
            ignore::Error::WithPath { path, err } => PathError {
                path: Some(path.clone()),
                message: PathError::from_walk(err).message,
            },
            ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
                PathError::from_walk(err)
            }
            ignore::Error::Loop { child, .. } => PathError {
                path: Some(child.clone()),
                message: "symbolic link loop".into(),
            },
            ignore::Error::Io(io_error) => PathError {
                path: None,
                message: describe_io(io_error),
            },
            other => PathError {
                path: None,
                message: one_line(&other.to_string()),
            },
        }
    }
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{}: {}", path.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Whether a path looks like a Python source tpulint checks when walking a directory.
pub fn is_python_file(path: &Path) -> bool {
    path.extension()
        .is_some_and(|extension| extension == "py" || extension == "pyi")
}

/// Whether a path is a Jupyter notebook (`.ipynb`), which the walk collects too: it is checked
/// as one module of its code cells.
pub fn is_notebook_file(path: &Path) -> bool {
    path.extension()
        .is_some_and(|extension| extension == "ipynb")
}

/// Expands `paths` (relative to `working_directory`) into the files to check, using up to
/// `threads` walker threads.
pub fn discover_files(
    paths: &[PathBuf],
    working_directory: &Path,
    resolver: &ProjectResolver,
    threads: usize,
) -> Discovery {
    let mut discovery = Discovery::default();
    let mut roots = Vec::new();
    for given in paths {
        let path = absolute(given, working_directory);
        match std::fs::metadata(&path) {
            Err(io_error) => discovery.path_errors.push(PathError {
                path: Some(path),
                message: describe_io(&io_error),
            }),
            // Directories are resolved only when needed: the walk resolves what is inside them.
            Ok(metadata) if metadata.is_dir() && !resolver.force_exclude() => roots.push(path),
            Ok(metadata) => match resolver.resolve_file(&path) {
                Err(error) => discovery.config_errors.push(error),
                Ok(project) if resolver.force_exclude() && project.is_path_excluded(&path) => {}
                Ok(_) if metadata.is_dir() => roots.push(path),
                Ok(project) => discovery.files.push(DiscoveredFile { path, project }),
            },
        }
    }

    if let Some((first, rest)) = roots.split_first() {
        let files = Mutex::new(Vec::new());
        let config_errors = Mutex::new(Vec::new());
        let path_errors = Mutex::new(Vec::new());
        let mut builder = WalkBuilder::new(first);
        for root in rest {
            builder.add(root);
        }
        builder
            .hidden(true)
            .parents(true)
            .git_ignore(true)
            .git_global(true)
            .git_exclude(true)
            .ignore(true)
            .require_git(false)
            .follow_links(false)
            .threads(threads.max(1));
        let filter_errors = &config_errors;
        let walker = builder.build_parallel();
        walker.run(|| {
            let files = &files;
            let path_errors = &path_errors;
            Box::new(move |entry| {
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(walk_error) => {
                        push(path_errors, PathError::from_walk(&walk_error));
                        return WalkState::Continue;
                    }
                };
                let path = entry.path();
                let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
                if entry.depth() > 0 {
                    // Skipping an excluded directory prunes it: its contents are never read.
                    let project = match resolver.resolve_file(path) {
                        Ok(project) => project,
                        Err(error) => {
                            push(filter_errors, error);
                            return WalkState::Skip;
                        }
                    };
                    if project.is_excluded(path) {
                        return WalkState::Skip;
                    }
                    if !is_dir && (is_python_file(path) || is_notebook_file(path)) {
                        push(
                            files,
                            DiscoveredFile {
                                path: path.to_path_buf(),
                                project,
                            },
                        );
                    }
                }
                WalkState::Continue
            })
        });
        discovery
            .files
            .extend(files.into_inner().unwrap_or_default());
        discovery
            .config_errors
            .extend(config_errors.into_inner().unwrap_or_default());
        discovery
            .path_errors
            .extend(path_errors.into_inner().unwrap_or_default());
    }

    discovery.files.sort_by(|a, b| a.path.cmp(&b.path));
    discovery.files.dedup_by(|a, b| a.path == b.path);
    discovery.config_errors.sort_by(|a, b| a.path.cmp(&b.path));
    discovery.config_errors.dedup();
    discovery.path_errors.sort();
    discovery.path_errors.dedup();
    discovery
}

fn push<T>(sink: &Mutex<Vec<T>>, item: T) {
    if let Ok(mut items) = sink.lock() {
        items.push(item);
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `No such file or directory` rather than `No such file or directory (os error 2)`.
pub fn describe_io(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}
