//! What a front end checks: a Python module or a Jupyter notebook, and the module the engine
//! sees for each (a notebook is checked as one module of its code cells).

use tpulint_analyzer::{Diagnostic, Settings, check_tree, syntax};

use crate::notebook::{Concatenation, Notebook, concatenate};

/// A source tpulint checks.
#[derive(Debug, Clone)]
pub enum SourceKind {
    Python(String),
    Notebook(Notebook),
}

impl SourceKind {
    /// The text of a Python source; `None` for a notebook.
    pub fn python_text(&self) -> Option<&str> {
        match self {
            SourceKind::Python(text) => Some(text),
            SourceKind::Notebook(_) => None,
        }
    }

    /// The module the engine checks: the text itself, or the notebook's checked cells joined.
    pub fn module(&self) -> Module {
        match self {
            SourceKind::Python(text) => Module {
                text: text.clone(),
                cells: None,
            },
            SourceKind::Notebook(notebook) => {
                let concatenation = concatenate(notebook.checked_sources());
                Module {
                    text: concatenation.original.clone(),
                    cells: Some(concatenation),
                }
            }
        }
    }
}

/// The module of a [`SourceKind`] and, for a notebook, how it maps onto the cells.
pub struct Module {
    /// The module as written (a notebook's cells with their IPython lines); what diagnostics'
    /// offsets refer to and what excerpts show.
    pub text: String,
    pub cells: Option<Concatenation>,
}

impl Module {
    /// The text the engine parses: for a notebook, IPython syntax blanked (same offsets).
    pub fn checked_text(&self) -> &str {
        self.cells
            .as_ref()
            .map_or(&self.text, |concatenation| &concatenation.text)
    }

    /// The module's diagnostics, in its offsets; a notebook's are confined to their cells (see
    /// [`Concatenation::confine`]).
    pub fn check(&self, settings: &Settings) -> Vec<Diagnostic> {
        let text = self.checked_text();
        let Some(tree) = syntax::parse(text, None) else {
            return Vec::new();
        };
        self.confine(check_tree(text, &tree, settings))
    }

    /// Diagnostics of [`Self::checked_text`] as this module can show and fix them.
    pub fn confine(&self, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        match &self.cells {
            Some(concatenation) => concatenation.confine(&diagnostics),
            None => diagnostics,
        }
    }

    /// Each checked cell's start offset and its 1-based number over all cells (empty for a
    /// Python module).
    pub fn cell_starts(&self) -> Vec<(usize, usize)> {
        self.cells
            .as_ref()
            .map(Concatenation::cell_starts)
            .unwrap_or_default()
    }
}
