//! Realistic Python documents for the benchmark, and the typing it replays.
//!
//! The default documents are built from this repository's own PyTorch code (`tests/fixtures`,
//! `examples`): files are concatenated with every top-level function and class renamed by a
//! suffix, so a 5,000-line module has 5,000 lines of distinct definitions rather than one file
//! repeated under the same names. `TPULINT_BENCH_FILE` / `TPULINT_BENCH_CORPUS` replace them with
//! real files read at bench time (nothing third-party is committed).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The workspace root (the bench crate lives in `<root>/bench`).
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ has a parent")
        .to_path_buf()
}

fn python_files_under(directory: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            python_files_under(&path, out);
        } else if path.extension().is_some_and(|extension| extension == "py") {
            out.push(path);
        }
    }
}

/// Every `.py` file under `directories`, sorted so that generated documents are reproducible.
pub fn python_files(directories: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for directory in directories {
        python_files_under(directory, &mut files);
    }
    files.sort();
    files
}

/// The repository's own Python sources the generated documents are made of.
pub fn repository_sources() -> Vec<String> {
    let root = repository_root();
    python_files(&[root.join("tests/fixtures"), root.join("examples")])
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .filter(|text| !text.trim().is_empty())
        .collect()
}

/// Names of the top-level functions and classes of `text`.
fn top_level_definitions(text: &str) -> HashSet<String> {
    text.lines()
        .filter_map(|line| {
            let rest = line
                .strip_prefix("async def ")
                .or_else(|| line.strip_prefix("def "))
                .or_else(|| line.strip_prefix("class "))?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// `text` with every identifier that names one of its top-level definitions suffixed.
pub fn rename_definitions(text: &str, suffix: &str) -> String {
    let names = top_level_definitions(text);
    let mut out = String::with_capacity(text.len() + names.len() * suffix.len() * 4);
    let mut identifier = String::new();
    let flush = |identifier: &mut String, out: &mut String| {
        out.push_str(identifier);
        if names.contains(identifier.as_str()) {
            out.push_str(suffix);
        }
        identifier.clear();
    };
    for character in text.chars() {
        let continues = character.is_ascii_alphanumeric() || character == '_';
        if continues && (!identifier.is_empty() || !character.is_ascii_digit()) {
            identifier.push(character);
            continue;
        }
        flush(&mut identifier, &mut out);
        out.push(character);
    }
    flush(&mut identifier, &mut out);
    out
}

/// Concatenates renamed `sources`, starting at `first` and wrapping around, until the result
/// has at least `min_lines` lines. `tag` makes the renaming distinct per document.
pub fn concatenate(sources: &[String], first: usize, min_lines: usize, tag: &str) -> String {
    assert!(
        !sources.is_empty(),
        "no Python sources to build documents from"
    );
    let mut out = String::new();
    let mut lines = 0;
    let mut copy = 0;
    while lines < min_lines {
        let source = &sources[(first + copy) % sources.len()];
        let renamed = rename_definitions(source, &format!("_{tag}{copy}"));
        // A blank line separates copies unless the previous one already ended with one; count
        // it only when it is written, so `lines` is the document's true line count.
        if !out.is_empty() && !out.ends_with("\n\n") {
            out.push('\n');
            lines += 1;
        }
        lines += renamed.lines().count();
        out.push_str(&renamed);
        if !out.ends_with('\n') {
            out.push('\n');
        }
        copy += 1;
    }
    out
}

/// The first `max_lines` lines of `text` (all of it when shorter).
pub fn first_lines(text: &str, max_lines: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n').take(max_lines) {
        out.push_str(line);
    }
    out
}

/// Up to `count` real documents of `min_lines..=max_lines` lines from a corpus directory.
pub fn corpus_documents(
    directory: &Path,
    count: usize,
    min_lines: usize,
    max_lines: usize,
) -> Vec<(PathBuf, String)> {
    python_files(&[directory.to_path_buf()])
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            let lines = text.lines().count();
            (min_lines..=max_lines)
                .contains(&lines)
                .then_some((path, text))
        })
        .take(count)
        .collect()
}

/// One keystroke: replace `length` characters at (`line`, `character`) with `text`.
/// Positions are in UTF-16 units; the typed text is ASCII, so they are also characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keystroke {
    pub line: u32,
    pub character: u32,
    pub length: u32,
    pub text: String,
}

/// A statement typed at every site: a host sync the linter reports once it is complete.
pub const TYPED_STATEMENT: &str = "loss_value = loss.detach().float().mean().item()";

/// Characters deleted with backspace and typed again at the end of each site.
const RETYPED: usize = 8;

/// Lines after which a statement can be typed: an indented `name = …` line that ends a simple
/// statement and is followed by a line at the same indentation (so the new line is inside the
/// same block, outside any bracket or string).
fn is_typing_site(line: &str, next: &str) -> bool {
    let indent = line.len() - line.trim_start().len();
    let next_indent = next.len() - next.trim_start().len();
    let trimmed = line.trim();
    let Some((target, _)) = trimmed.split_once(" = ") else {
        return false;
    };
    indent >= 4
        && line.is_ascii()
        && next_indent == indent
        && !next.trim().is_empty()
        && target
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && trimmed.ends_with(|c: char| c.is_ascii_alphanumeric() || c == ')' || c == ']')
        && !trimmed.contains('#')
        && !trimmed.contains("\"\"\"")
        && !trimmed.contains("'''")
}

/// The keystrokes of typing [`TYPED_STATEMENT`] on a new line after `sites` lines spread over
/// `text`: Enter (with the editor's auto-indent), one character at a time, then backspaces and
/// the same characters typed again. Sites are visited from the bottom up, so line numbers of
/// sites still to come are not shifted.
pub fn typing_script(text: &str, sites: usize) -> Vec<Keystroke> {
    let lines: Vec<&str> = text.lines().collect();
    let mut chosen: Vec<usize> = Vec::new();
    for site in 0..sites {
        let from = site * lines.len() / sites;
        if let Some(line) = (from..lines.len().saturating_sub(1))
            .find(|&line| is_typing_site(lines[line], lines[line + 1]))
            && !chosen.contains(&line)
        {
            chosen.push(line);
        }
    }
    let mut script = Vec::new();
    for &line_number in chosen.iter().rev() {
        let line = lines[line_number];
        let indent = &line[..line.len() - line.trim_start().len()];
        let new_line = (line_number + 1) as u32;
        script.push(Keystroke {
            line: line_number as u32,
            character: line.len() as u32,
            length: 0,
            text: format!("\n{indent}"),
        });
        let start = indent.len() as u32;
        for (typed, character) in TYPED_STATEMENT.chars().enumerate() {
            script.push(Keystroke {
                line: new_line,
                character: start + typed as u32,
                length: 0,
                text: character.to_string(),
            });
        }
        let end = start + TYPED_STATEMENT.len() as u32;
        for deleted in 1..=RETYPED as u32 {
            script.push(Keystroke {
                line: new_line,
                character: end - deleted,
                length: 1,
                text: String::new(),
            });
        }
        let retyped = &TYPED_STATEMENT[TYPED_STATEMENT.len() - RETYPED..];
        for (typed, character) in retyped.chars().enumerate() {
            script.push(Keystroke {
                line: new_line,
                character: end - RETYPED as u32 + typed as u32,
                length: 0,
                text: character.to_string(),
            });
        }
    }
    script
}

/// Applies a keystroke to `text` the way the server does (for checking the script).
pub fn apply(text: &mut String, keystroke: &Keystroke) {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(keystroke.line as usize)
        .map(str::len)
        .sum();
    let start = line_start + keystroke.character as usize;
    text.replace_range(start..start + keystroke.length as usize, &keystroke.text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_top_level_definitions_and_their_uses_only() {
        let text = "def train(model):\n    return train2(model)\n\nclass Net:\n    pass\n\nx = train(Net())\n";
        assert_eq!(
            rename_definitions(text, "_a1"),
            "def train_a1(model):\n    return train2(model)\n\nclass Net_a1:\n    pass\n\nx = train_a1(Net_a1())\n"
        );
    }

    #[test]
    fn a_large_document_has_the_lines_asked_for_and_distinct_definitions() {
        let sources = repository_sources();
        assert!(sources.len() > 20, "fixtures and examples are found");
        let document = concatenate(&sources, 0, 5_000, "big");
        let lines = document.lines().count();
        assert!((5_000..6_000).contains(&lines), "{lines} lines");
        let definitions: Vec<&str> = document
            .lines()
            .filter(|line| line.starts_with("def ") || line.starts_with("class "))
            .collect();
        let distinct: HashSet<&str> = definitions.iter().copied().collect();
        assert_eq!(definitions.len(), distinct.len());
    }

    #[test]
    fn the_typing_script_types_the_statement_at_every_site() {
        let sources = repository_sources();
        let mut text = concatenate(&sources, 0, 5_000, "big");
        let original_lines = text.lines().count();
        let script = typing_script(&text, 6);
        for keystroke in &script {
            apply(&mut text, keystroke);
        }
        let typed = text
            .lines()
            .filter(|line| line.trim() == TYPED_STATEMENT)
            .count();
        assert_eq!(typed, 6);
        assert_eq!(text.lines().count(), original_lines + 6);
    }
}
