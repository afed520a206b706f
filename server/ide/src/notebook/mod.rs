//! Jupyter notebooks: the nbformat model ([`Notebook`]), IPython syntax neutralised to
//! same-length whitespace ([`neutralise_ipython`]), and the one module a notebook is checked as
//! ([`concatenate`]) with the mapping of diagnostics and fixes back into cells.
//!
//! A notebook is checked as one module of its code cells in order, so an `import torch_xla` in
//! the first cell sets the backend for the last, and `# noqa` works per line as in a file.
//! A diagnostic belongs to the cell it starts in; a fix is kept only when every edit stays in
//! that cell and off IPython lines, so fixing can never corrupt a cell boundary or a magic.

mod concatenation;
mod ipython;
mod json_spans;
mod model;

pub use concatenation::{CellSpan, Concatenation, concatenate};
pub use ipython::neutralise_ipython;
pub use model::{Cell, CellKind, Notebook, NotebookError};
