//! A Jupyter notebook as tpulint sees it: its cells in order (kind, id, source text), read from
//! nbformat 4 JSON and written back by replacing only the `source` values of changed cells, so
//! outputs, metadata, cell ids, key order, indentation and the trailing newline stay as they
//! were byte for byte.

use std::ops::Range;

use serde_json::Value;

use super::concatenation::Concatenation;
use super::json_spans::{self, SourceValue};

/// What a cell holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellKind {
    Code,
    Markdown,
    Raw,
}

/// One cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub kind: CellKind,
    /// The nbformat 4.5 cell id (absent in 4.0–4.4).
    pub id: Option<String>,
    /// The cell's text: the `source` lines joined.
    pub source: String,
}

/// A notebook read from nbformat JSON, able to write itself back with new cell sources.
#[derive(Debug, Clone)]
pub struct Notebook {
    cells: Vec<Cell>,
    /// Whether the kernel's language is Python (or unstated): only then are code cells checked.
    python: bool,
    /// The JSON text it was read from.
    raw: String,
    /// For each cell, where its `source` value lies in `raw` and how it is written.
    sources: Vec<SourceValue>,
}

/// Why a text is not a notebook tpulint can read; one line, without the file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotebookError(pub String);

impl std::fmt::Display for NotebookError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for NotebookError {}

fn invalid(message: impl Into<String>) -> NotebookError {
    NotebookError(message.into())
}

impl Notebook {
    /// Reads nbformat 4 JSON (4.0 to 4.5).
    pub fn from_json(text: &str) -> Result<Notebook, NotebookError> {
        let document: Value = serde_json::from_str(text).map_err(|error| {
            invalid(format!(
                "not a valid notebook: invalid JSON at line {} column {}: {}",
                error.line(),
                error.column(),
                json_error_reason(&error)
            ))
        })?;
        let Value::Object(root) = &document else {
            return Err(invalid("not a valid notebook: the JSON is not an object"));
        };
        match root.get("nbformat").and_then(Value::as_u64) {
            Some(4) => {}
            Some(version) => {
                return Err(invalid(format!(
                    "unsupported notebook format {version} (tpulint reads nbformat 4; convert it with `jupyter nbconvert --to notebook`)"
                )));
            }
            None => {
                return Err(invalid(
                    "not a valid notebook: no `nbformat` version number",
                ));
            }
        }
        let Some(Value::Array(cells_json)) = root.get("cells") else {
            return Err(invalid("not a valid notebook: no `cells` list"));
        };
        let mut cells = Vec::with_capacity(cells_json.len());
        for (index, cell) in cells_json.iter().enumerate() {
            let number = index + 1;
            let kind = match cell.get("cell_type").and_then(Value::as_str) {
                Some("code") => CellKind::Code,
                Some("markdown") => CellKind::Markdown,
                Some("raw") => CellKind::Raw,
                Some(other) => {
                    return Err(invalid(format!(
                        "not a valid notebook: cell {number} has the unknown cell_type `{other}`"
                    )));
                }
                None => {
                    return Err(invalid(format!(
                        "not a valid notebook: cell {number} has no cell_type"
                    )));
                }
            };
            let source = match cell.get("source") {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Array(lines)) => {
                    let mut text = String::new();
                    for line in lines {
                        let Value::String(line) = line else {
                            return Err(invalid(format!(
                                "not a valid notebook: cell {number} has a source line that is not a string"
                            )));
                        };
                        text.push_str(line);
                    }
                    text
                }
                _ => {
                    return Err(invalid(format!(
                        "not a valid notebook: cell {number} has no source"
                    )));
                }
            };
            let id = cell.get("id").and_then(Value::as_str).map(str::to_string);
            cells.push(Cell { kind, id, source });
        }
        let sources = json_spans::cell_sources(text).ok_or_else(|| {
            invalid("not a valid notebook: the cells' sources could not be located")
        })?;
        if sources.len() != cells.len() {
            // Duplicate keys: serde_json keeps the last value, the scanner too, but a count that
            // differs means the layout is not one we can rewrite safely.
            return Err(invalid(
                "not a valid notebook: duplicate `cells` keys or cells without a source",
            ));
        }
        Ok(Notebook {
            cells,
            python: is_python_notebook(root),
            raw: text.to_string(),
            sources,
        })
    }

    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// Whether the notebook's kernel language is Python (or unstated).
    pub fn is_python(&self) -> bool {
        self.python
    }

    /// Whether cell `index` is checked: a code cell of a Python notebook.
    pub fn is_checked(&self, index: usize) -> bool {
        self.python
            && self
                .cells
                .get(index)
                .is_some_and(|cell| cell.kind == CellKind::Code)
    }

    /// Every cell's source if checked, `None` otherwise (what
    /// [`super::concatenate`] takes).
    pub fn checked_sources(&self) -> impl Iterator<Item = Option<&str>> {
        self.cells
            .iter()
            .enumerate()
            .map(|(index, cell)| self.is_checked(index).then_some(cell.source.as_str()))
    }

    /// Where the module of `concatenation` (this notebook's checked cells joined) is written in
    /// the notebook's JSON: sorted `(module offset, JSON offset)` pairs, the bytes after each up
    /// to the next written one for one. What lets a report point at a line of the `.ipynb` file.
    pub fn file_offsets(&self, concatenation: &Concatenation) -> Vec<(usize, usize)> {
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        for span in &concatenation.spans {
            let Some(value) = self.sources.get(span.cell) else {
                continue;
            };
            for (decoded, raw) in json_spans::decoded_offsets(&self.raw, &value.range) {
                if decoded > span.len {
                    break;
                }
                let pair = (span.start + decoded, raw);
                // The byte after a line's escaped `\n` is written where the next string starts:
                // the later pair for one offset is the right one.
                match pairs.last_mut() {
                    Some(last) if last.0 == pair.0 => *last = pair,
                    _ => pairs.push(pair),
                }
            }
        }
        pairs
    }

    /// The JSON text it was read from.
    pub fn json(&self) -> &str {
        &self.raw
    }

    /// The notebook with cell `index`'s source replaced for each `(index, source)` given; its
    /// JSON differs from this one's only inside those cells' `source` values.
    pub fn with_sources(&self, changes: &[(usize, String)]) -> Notebook {
        let mut edits: Vec<(Range<usize>, String)> = Vec::new();
        let mut cells = self.cells.clone();
        let mut sources = self.sources.clone();
        for (index, new_source) in changes {
            let Some(cell) = cells.get_mut(*index) else {
                continue;
            };
            if cell.source == *new_source {
                continue;
            }
            cell.source = new_source.clone();
            let value = &sources[*index];
            edits.push((value.range.clone(), value.render(new_source)));
        }
        edits.sort_by_key(|(range, _)| range.start);
        let mut raw = String::with_capacity(self.raw.len() + 64);
        let mut last = 0;
        for (range, content) in &edits {
            raw.push_str(&self.raw[last..range.start]);
            raw.push_str(content);
            last = range.end;
        }
        raw.push_str(&self.raw[last..]);
        // Spans after an edit moved; re-scan (cheap, and the new text is ours).
        if !edits.is_empty()
            && let Some(rescanned) = json_spans::cell_sources(&raw)
        {
            sources = rescanned;
        }
        Notebook {
            cells,
            python: self.python,
            raw,
            sources,
        }
    }
}

/// serde_json's message without its trailing " at line L column C" (given separately).
fn json_error_reason(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

/// `metadata.kernelspec.language` or `metadata.language_info.name`; unstated counts as Python
/// (Colab and many hand-written notebooks leave it out).
fn is_python_notebook(root: &serde_json::Map<String, Value>) -> bool {
    let metadata = root.get("metadata");
    let language = metadata
        .and_then(|metadata| metadata.get("kernelspec"))
        .and_then(|kernel| kernel.get("language"))
        .and_then(Value::as_str)
        .or_else(|| {
            metadata
                .and_then(|metadata| metadata.get("language_info"))
                .and_then(|info| info.get("name"))
                .and_then(Value::as_str)
        });
    language.is_none_or(|language| language.eq_ignore_ascii_case("python"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {},
   "source": [
    "# Title\n",
    "text"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 1,
   "id": "first",
   "metadata": {"tags": ["x"]},
   "outputs": [{"name": "stdout", "output_type": "stream", "text": ["1\n"]}],
   "source": [
    "import torch\n",
    "x = torch.ones(2)  # é \"q\""
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "metadata": {},
   "outputs": [],
   "source": []
  },
  {
   "cell_type": "code",
   "metadata": {},
   "outputs": [],
   "source": "%time y = 1\n"
  }
 ],
 "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

    #[test]
    fn reads_cells_in_order() {
        let notebook = Notebook::from_json(NOTEBOOK).expect("reads");
        let cells = notebook.cells();
        assert_eq!(cells.len(), 4);
        assert_eq!(cells[0].kind, CellKind::Markdown);
        assert_eq!(cells[0].source, "# Title\ntext");
        assert_eq!(cells[1].id.as_deref(), Some("first"));
        assert_eq!(
            cells[1].source,
            "import torch\nx = torch.ones(2)  # é \"q\""
        );
        assert_eq!(cells[2].source, "");
        assert_eq!(cells[3].source, "%time y = 1\n");
        let checked: Vec<_> = notebook.checked_sources().map(|s| s.is_some()).collect();
        assert_eq!(checked, [false, true, true, true]);
    }

    #[test]
    fn unchanged_sources_keep_the_text_byte_for_byte() {
        let notebook = Notebook::from_json(NOTEBOOK).expect("reads");
        let same = notebook.with_sources(&[(1, notebook.cells()[1].source.clone())]);
        assert_eq!(same.json(), NOTEBOOK);
    }

    #[test]
    fn a_changed_source_is_written_in_the_cell_layout() {
        let notebook = Notebook::from_json(NOTEBOOK).expect("reads");
        let changed = notebook.with_sources(&[
            (
                1,
                "import torch\nx = torch.ones(2, device=\"tpu\")\n".to_string(),
            ),
            (2, "y = 2".to_string()),
            (3, "%time y = 3\n".to_string()),
        ]);
        let expected = NOTEBOOK
            .replace(
                "    \"import torch\\n\",\n    \"x = torch.ones(2)  # é \\\"q\\\"\"\n   ]",
                "    \"import torch\\n\",\n    \"x = torch.ones(2, device=\\\"tpu\\\")\\n\"\n   ]",
            )
            .replace("\"source\": []", "\"source\": [\n    \"y = 2\"\n   ]")
            .replace("\"%time y = 1\\n\"", "\"%time y = 3\\n\"");
        assert_eq!(changed.json(), expected);
        let reread = Notebook::from_json(changed.json()).expect("still valid");
        assert_eq!(
            reread.cells()[1].source,
            "import torch\nx = torch.ones(2, device=\"tpu\")\n"
        );
        assert_eq!(reread.cells()[2].source, "y = 2");
        assert_eq!(reread.cells()[1].id.as_deref(), Some("first"));
    }

    #[test]
    fn errors_are_one_line() {
        for (text, expected) in [
            ("{", "not a valid notebook: invalid JSON at line 1 column 1"),
            ("[]", "not a valid notebook: the JSON is not an object"),
            (
                r#"{"nbformat": 3, "worksheets": []}"#,
                "unsupported notebook format 3",
            ),
            (
                r#"{"nbformat": 4}"#,
                "not a valid notebook: no `cells` list",
            ),
            (
                r#"{"nbformat": 4, "cells": [{"cell_type": "code"}]}"#,
                "not a valid notebook: cell 1 has no source",
            ),
        ] {
            let error = Notebook::from_json(text).expect_err(text).to_string();
            assert!(error.starts_with(expected), "{error}");
            assert!(!error.contains('\n'));
        }
    }

    #[test]
    fn other_languages_are_not_checked() {
        let text = r#"{"nbformat": 4, "nbformat_minor": 0, "metadata": {"language_info": {"name": "R"}},
            "cells": [{"cell_type": "code", "source": "x <- 1", "metadata": {}, "outputs": []}]}"#;
        let notebook = Notebook::from_json(text).expect("reads");
        assert!(!notebook.is_python());
        assert!(notebook.checked_sources().all(|source| source.is_none()));
    }

    /// Where the module offset `offset` is written in `json`, by the pairs of `file_offsets`.
    fn written_at(pairs: &[(usize, usize)], offset: usize) -> usize {
        let index = pairs.partition_point(|&(module, _)| module <= offset) - 1;
        pairs[index].1 + (offset - pairs[index].0)
    }

    #[test]
    fn every_character_of_a_checked_cell_is_located_in_the_json() {
        // Escapes of every kind: quotes, backslashes, `\n` inside one-string sources, `\u`
        // escapes of a two-byte character, a three-byte one and a surrogate pair.
        let escapes = r##"{
 "cells": [
  {"cell_type": "code", "metadata": {}, "outputs": [],
   "source": ["x = \"a\\\\b\"  # \u00e9 \u20ac \ud83d\ude00 é\n", "y = x.item()\n"]},
  {"cell_type": "markdown", "metadata": {}, "source": ["skip\n"]},
  {"cell_type": "code", "metadata": {}, "outputs": [], "source": "a = 1\nb = a.item()\n\tc = 2"}
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 4
}
"##;
        for text in [NOTEBOOK, escapes] {
            let notebook = Notebook::from_json(text).expect("reads");
            let concatenation = super::super::concatenate(notebook.checked_sources());
            let pairs = notebook.file_offsets(&concatenation);
            assert!(
                pairs.windows(2).all(|pair| pair[0].0 < pair[1].0),
                "{pairs:?}"
            );
            for span in &concatenation.spans {
                let source = &notebook.cells()[span.cell].source;
                for (local, character) in source.char_indices() {
                    let at = written_at(&pairs, span.start + local);
                    let raw = &text[at..];
                    let expected = match character {
                        '"' | '\\' | '\n' | '\t' => raw.starts_with('\\'),
                        _ if !raw.starts_with('\\') => raw.starts_with(character),
                        // A `\u` escape decodes to this character.
                        _ => {
                            let escape = if raw[2..6].eq_ignore_ascii_case("d83d") {
                                12
                            } else {
                                6
                            };
                            serde_json::from_str::<String>(&format!("\"{}\"", &raw[..escape]))
                                .unwrap()
                                .starts_with(character)
                        }
                    };
                    assert!(
                        expected,
                        "cell {} byte {local} {character:?} at {raw:.12?}",
                        span.cell
                    );
                }
            }
        }
    }
}
