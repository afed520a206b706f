//! The `junit` format: a JUnit XML report, which CI services (GitLab, Jenkins, Azure Pipelines,
//! CircleCI) show as test results. Laid out as ruff lays it out: one `testsuite` per file, one
//! failed `testcase` per diagnostic (`name` `tpulint.CODE`, `classname` the path without its
//! extension, `line` and `column` attributes (inside the cell, in a notebook, whose cell the
//! failure text names), the message in `failure`), and a single passing
//! test case when nothing was found, so that the report is never empty.

use std::fmt::Write as _;

use crate::location::SourceFile;

/// Escapes text for an XML attribute value or element content. Characters XML 1.0 cannot hold
/// at all (most C0 controls) become U+FFFD rather than an invalid document.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => {
                let _ = write!(out, "&#{};", u32::from(character));
            }
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// `examples/xla/train.py` → `examples/xla/train` (ruff's `classname`).
fn classname(name: &str) -> String {
    let name = name.replace('\\', "/");
    let (directory, file) = match name.rfind('/') {
        Some(slash) => (&name[..=slash], &name[slash + 1..]),
        None => ("", name.as_str()),
    };
    let stem = match file.rfind('.') {
        Some(dot) if dot > 0 => &file[..dot],
        _ => file,
    };
    format!("{directory}{stem}")
}

/// The whole report (ending with a newline).
pub fn render_junit(files: &[SourceFile]) -> String {
    let total: usize = files.iter().map(|file| file.diagnostics.len()).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"tpulint\" tests=\"{}\" failures=\"{total}\" errors=\"0\">",
        total.max(1)
    );
    if total == 0 {
        out.push_str(
            "    <testsuite name=\"tpulint\" tests=\"1\" disabled=\"0\" errors=\"0\" failures=\"0\" package=\"tpulint\">\n",
        );
        out.push_str("        <testcase name=\"No errors found\" classname=\"tpulint\"/>\n");
        out.push_str("    </testsuite>\n");
    }
    for file in files.iter().filter(|file| !file.diagnostics.is_empty()) {
        let count = file.diagnostics.len();
        let _ = writeln!(
            out,
            "    <testsuite name=\"{}\" tests=\"{count}\" disabled=\"0\" errors=\"0\" failures=\"{count}\" package=\"tpulint\">",
            escape(&file.name)
        );
        let class = escape(&classname(&file.name));
        for diagnostic in &file.diagnostics {
            let start = file.location(diagnostic.range.start);
            let message = escape(&diagnostic.message);
            let _ = writeln!(
                out,
                "        <testcase name=\"tpulint.{}\" classname=\"{class}\" line=\"{}\" column=\"{}\">",
                escape(diagnostic.code),
                start.row,
                start.column
            );
            let cell = start
                .cell
                .map(|cell| format!("cell {cell}, "))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "            <failure message=\"{message}\" type=\"{}\">{cell}line {}, col {}, {message}</failure>",
                diagnostic.severity.as_str(),
                start.row,
                start.column
            );
            out.push_str("        </testcase>\n");
        }
        out.push_str("    </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classname_drops_the_extension_only() {
        assert_eq!(classname("a/b/train.py"), "a/b/train");
        assert_eq!(classname("train.py"), "train");
        assert_eq!(classname(".hidden"), ".hidden");
        assert_eq!(classname("a\\b.pyi"), "a/b");
    }

    #[test]
    fn escapes_markup_and_controls() {
        assert_eq!(
            escape("<a href=\"x\">&'\u{1}\n"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&apos;\u{FFFD}&#10;"
        );
    }
}
