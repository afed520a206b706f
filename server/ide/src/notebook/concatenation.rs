//! The module a notebook is checked as (its Python code cells, neutralised and joined) and the
//! mapping of diagnostics and fixes back into one cell's own coordinates.

use tpulint_analyzer::{Diagnostic, Edit, TextRange};

use super::ipython::neutralise_ipython;

/// Where a Python code cell sits in the concatenated module.
#[derive(Debug, Clone)]
pub struct CellSpan {
    /// Index into the notebook's cells.
    pub cell: usize,
    pub start: usize,
    /// The cell's own length (a line break added after it is not part of it).
    pub len: usize,
    /// Cell-local ranges of neutralised IPython syntax.
    pub neutralised: Vec<TextRange>,
}

impl CellSpan {
    pub fn end(&self) -> usize {
        self.start + self.len
    }

    /// The cell-local range of `range`, if it lies inside this cell.
    pub fn local(&self, range: &TextRange) -> Option<TextRange> {
        (self.start <= range.start && range.start <= range.end && range.end <= self.end())
            .then(|| range.start - self.start..range.end - self.start)
    }

    /// Whether a cell-local edit range touches neutralised IPython syntax.
    pub fn touches_ipython(&self, local: &TextRange) -> bool {
        self.neutralised.iter().any(|magic| {
            if local.is_empty() {
                magic.start < local.start && local.start < magic.end
            } else {
                magic.start < local.end && local.start < magic.end
            }
        })
    }
}

/// The module a notebook is checked as.
pub struct Concatenation {
    /// What is checked: the cells with IPython syntax neutralised.
    pub text: String,
    /// The same module with the cells' own text (same length as `text`, same offsets): what is
    /// shown in excerpts and what fixes apply to.
    pub original: String,
    pub spans: Vec<CellSpan>,
}

/// The Python code cells of `cells` (given as optional texts: `None` for cells not checked),
/// neutralised and joined, each ending with a line break so the next starts a new line.
pub fn concatenate<'a>(cells: impl IntoIterator<Item = Option<&'a str>>) -> Concatenation {
    let mut text = String::new();
    let mut original = String::new();
    let mut spans = Vec::new();
    for (cell, source) in cells.into_iter().enumerate() {
        let Some(source) = source else { continue };
        let (neutral, neutralised) = neutralise_ipython(source);
        let start = text.len();
        text.push_str(&neutral);
        original.push_str(source);
        if !neutral.is_empty() && !neutral.ends_with('\n') {
            text.push('\n');
            original.push('\n');
        }
        spans.push(CellSpan {
            cell,
            start,
            len: source.len(),
            neutralised,
        });
    }
    Concatenation {
        text,
        original,
        spans,
    }
}

impl Concatenation {
    /// `diagnostics` (of [`Self::text`]) as the notebook can show them, still in module
    /// offsets: each clipped to the cell it starts in, a fix kept only inside that cell and off
    /// IPython lines, related locations kept only inside a cell. Diagnostics outside every cell
    /// are dropped.
    pub fn confine(&self, diagnostics: &[Diagnostic]) -> Vec<Diagnostic> {
        diagnostics
            .iter()
            .filter_map(|diagnostic| {
                let (span_index, mut mapped) = self.map_diagnostic(diagnostic)?;
                let start = self.spans[span_index].start;
                let shift = |range: &mut TextRange| *range = range.start + start..range.end + start;
                shift(&mut mapped.range);
                if let Some(fix) = &mut mapped.fix {
                    fix.edits.iter_mut().for_each(|edit| shift(&mut edit.range));
                }
                mapped.related = diagnostic
                    .related
                    .iter()
                    .filter(|related| {
                        self.span_at(related.range.start)
                            .is_some_and(|index| self.spans[index].local(&related.range).is_some())
                    })
                    .cloned()
                    .collect();
                Some(mapped)
            })
            .collect()
    }

    /// Each checked cell's start in the module and its 1-based number over all cells.
    pub fn cell_starts(&self) -> Vec<(usize, usize)> {
        self.spans
            .iter()
            .map(|span| (span.start, span.cell + 1))
            .collect()
    }

    /// The span a diagnostic starting at `offset` belongs to: the cell containing it, or the
    /// cell it ends (an offset at a cell's end, or in the line break added after it).
    pub fn span_at(&self, offset: usize) -> Option<usize> {
        let after = self.spans.partition_point(|span| span.start <= offset);
        let candidate = after.checked_sub(1)?;
        let span = &self.spans[candidate];
        (offset <= span.end() + 1).then_some(candidate)
    }

    /// The related locations of `diagnostic` that lie in a cell other than span `own_span`, as
    /// (cell index, cell-local range, message). Ranges crossing a cell boundary are dropped.
    pub fn related_elsewhere(
        &self,
        diagnostic: &Diagnostic,
        own_span: usize,
    ) -> Vec<(usize, TextRange, String)> {
        diagnostic
            .related
            .iter()
            .filter_map(|related| {
                let index = self.span_at(related.range.start)?;
                let span = &self.spans[index];
                let local = span.local(&related.range)?;
                (index != own_span).then(|| (span.cell, local, related.message.clone()))
            })
            .collect()
    }

    /// `diagnostic` in the coordinates of the cell it starts in (range clipped to the cell;
    /// related locations in other cells left out, see [`Self::related_elsewhere`]; a fix kept only if it stays inside the cell and off
    /// IPython lines). Returns the span index and the mapped diagnostic.
    pub fn map_diagnostic(&self, diagnostic: &Diagnostic) -> Option<(usize, Diagnostic)> {
        let span_index = self.span_at(diagnostic.range.start)?;
        let span = &self.spans[span_index];
        // Clipped to the cell; a diagnostic starting in the line break added after the cell
        // becomes an empty range at the cell's end.
        let start = diagnostic.range.start.min(span.end());
        let end = diagnostic.range.end.max(start).min(span.end());
        // Ranges are computed on the neutralised text, where IPython lines are spaces: snapped
        // to the characters of the cell's own text (a `%magic é` line has multi-byte characters
        // there; found by the `notebook` fuzz target). Cell boundaries are character boundaries.
        let start = tpulint_analyzer::source::floor_char_boundary(&self.original, start);
        let mut end = end;
        while end < span.end() && !self.original.is_char_boundary(end) {
            end += 1;
        }
        let (start, end) = (start - span.start, end - span.start);
        let fix = diagnostic.fix.as_ref().and_then(|fix| {
            let edits = fix
                .edits
                .iter()
                .map(|edit| {
                    let local = span.local(&edit.range)?;
                    (!span.touches_ipython(&local)).then(|| Edit {
                        range: local,
                        content: edit.content.clone(),
                    })
                })
                .collect::<Option<Vec<Edit>>>()?;
            Some(tpulint_analyzer::Fix {
                applicability: fix.applicability,
                title: fix.title.clone(),
                edits,
            })
        });
        let related = diagnostic
            .related
            .iter()
            .filter_map(|related| {
                span.local(&related.range)
                    .map(|range| tpulint_analyzer::Related {
                        range,
                        message: related.message.clone(),
                    })
            })
            .collect();
        Some((
            span_index,
            Diagnostic {
                range: start..end,
                fix,
                related,
                ..diagnostic.clone()
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (fuzz target `notebook`, fuzz/open/notebook-range-inside-character): a range on
    /// a neutralised IPython line with multi-byte characters lands on character boundaries of the
    /// cell's own text.
    #[test]
    fn ranges_on_neutralised_lines_snap_to_characters() {
        let cell = "%time é\nx = 1\n";
        let concatenation = concatenate([Some(cell)]);
        let diagnostic = Diagnostic {
            code: "TPU000",
            name: "test",
            message: String::new(),
            range: 7..8,
            severity: tpulint_analyzer::Severity::Error,
            fix: None,
            related: Vec::new(),
            tag: None,
        };
        let (_, mapped) = concatenation.map_diagnostic(&diagnostic).expect("mapped");
        assert!(
            cell.is_char_boundary(mapped.range.start),
            "{:?}",
            mapped.range
        );
        assert!(
            cell.is_char_boundary(mapped.range.end),
            "{:?}",
            mapped.range
        );
        assert_eq!(mapped.range, 6..8);
    }

    #[test]
    fn diagnostics_map_to_their_cell_and_are_clipped() {
        let concatenation = concatenate([Some("import torch\n"), None, Some("x = 1")]);
        assert_eq!(concatenation.text, "import torch\nx = 1\n");
        let diagnostic = Diagnostic {
            code: "TPU000",
            name: "test",
            message: String::new(),
            range: 7..16,
            severity: tpulint_analyzer::Severity::Warning,
            fix: Some(tpulint_analyzer::Fix::safe(
                "cross",
                vec![Edit::replace(7..16, "x")],
            )),
            related: vec![tpulint_analyzer::Related {
                range: 13..14,
                message: String::new(),
            }],
            tag: None,
        };
        let (span, mapped) = concatenation.map_diagnostic(&diagnostic).expect("mapped");
        assert_eq!(concatenation.spans[span].cell, 0);
        assert_eq!(mapped.range, 7..13);
        assert!(mapped.fix.is_none(), "a fix crossing cells is dropped");
        assert!(mapped.related.is_empty());
        assert_eq!(
            concatenation.related_elsewhere(&diagnostic, span),
            [(2, 0..1, String::new())]
        );
        let inside = Diagnostic {
            range: 13..14,
            fix: Some(tpulint_analyzer::Fix::safe(
                "local",
                vec![Edit::replace(17..18, "2")],
            )),
            related: Vec::new(),
            ..diagnostic
        };
        let at_break = Diagnostic {
            range: 19..19,
            ..inside.clone()
        };
        let (span, mapped) = concatenation.map_diagnostic(&at_break).expect("mapped");
        assert_eq!((concatenation.spans[span].cell, mapped.range), (2, 5..5));
        let (span, mapped) = concatenation.map_diagnostic(&inside).expect("mapped");
        assert_eq!(concatenation.spans[span].cell, 2);
        assert_eq!(mapped.range, 0..1);
        assert_eq!(mapped.fix.expect("kept").edits[0].range, 4..5);
    }
}
