//! The I/O side of tpulint, shared by the CLI and the language server: finding and parsing
//! configuration (`[tool.tpulint]` in `pyproject.toml`, or `tpulint.toml`), discovering Python
//! files (gitignore-aware, in parallel), and reading and writing sources without losing their
//! encoding facts (UTF-8 BOM, line endings).
//!
//! The analyzer stays free of I/O; everything that touches the disk for it lives here.

pub mod config;
pub mod discovery;
pub mod source;

pub use config::{
    ConfigError, Overrides, Project, ProjectResolver, absolute, find_config_file, load_config_file,
    parse_config,
};
pub use discovery::{
    DiscoveredFile, Discovery, PathError, discover_files, is_notebook_file, is_python_file,
};
pub use source::{LineEndings, SourceText, read_source, write_source};
