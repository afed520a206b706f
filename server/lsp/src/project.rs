//! Project configuration discovered in a workspace folder (`pyproject.toml` `[tool.tpulint]`,
//! `tpulint.toml`, `.tpulint.toml`).
//!
//! Reading those files is the `tpulint_workspace` crate's job; until that crate is wired in here,
//! a folder gets the default configuration and the editor's settings.

use std::path::Path;

use tpulint_analyzer::Configuration;

use crate::session::ProjectFolder;

pub fn load(root: &Path) -> Result<ProjectFolder, String> {
    Ok(ProjectFolder {
        root: root.to_path_buf(),
        configuration: Configuration::default(),
        source: None,
    })
}
