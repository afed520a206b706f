//! The `github` format: GitHub Actions workflow commands, one annotation per diagnostic
//! (`::warning title=tpulint (TPU101),file=…,line=…,col=…,endLine=…,endColumn=…::message`).

use tpulint_analyzer::{Diagnostic, Severity};

use crate::location::SourceFile;

/// The workflow command for a severity: `Info` becomes a notice.
fn command(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    }
}

/// Escapes a command's message (data) part.
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property value (`file=`, `title=`), where `:` and `,` are separators too.
fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// One annotation line (without a trailing newline).
pub fn render_github(file: &SourceFile, diagnostic: &Diagnostic) -> String {
    let start = file.location(diagnostic.range.start);
    let end = file.location(diagnostic.range.end);
    // In a notebook the annotation sits on the JSON line holding the finding (what GitHub
    // shows of an `.ipynb`); the message says where it is in the notebook.
    let message = match start.cell {
        Some(cell) => format!(
            "cell {cell}, line {}, col {}: {}",
            start.row, start.column, diagnostic.message
        ),
        None => diagnostic.message.clone(),
    };
    format!(
        "::{} title={},file={},line={},col={},endLine={},endColumn={}::{}",
        command(diagnostic.severity),
        escape_property(&format!("tpulint ({})", diagnostic.code)),
        escape_property(&file.name),
        start.file_row,
        start.file_column,
        end.file_row,
        end.file_column,
        escape_data(&message)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_separators() {
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
        assert_eq!(escape_data("x\ny"), "x%0Ay");
    }
}
