//! Edits to a project's configuration text that an editor offers as code actions: setting the
//! TPU backend (`backend = "torch_xla"`), which turns the display-only device fixes of a project
//! whose code names no backend into real ones. Text edits only, so the file keeps its comments
//! and layout; the LSP layer turns them into workspace edits.

use tpulint_analyzer::Edit;

/// The edit that sets `backend = "<backend>"` in configuration file `file_name` (with content
/// `text`): the value of an existing `backend` key is replaced; otherwise the key is inserted
/// where it belongs (under `[tool.tpulint]` in `pyproject.toml`, before the first table in
/// `tpulint.toml` / `.tpulint.toml`), and a missing `[tool.tpulint]` table is appended.
pub fn set_backend(file_name: &str, text: &str, backend: &str) -> Edit {
    let line = format!("backend = \"{backend}\"");
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let in_pyproject = file_name == "pyproject.toml";
    // Where the keys of tpulint's table start: the top of a `tpulint.toml`, the line after
    // `[tool.tpulint]` in a `pyproject.toml`.
    let mut section_start = (!in_pyproject).then_some(0);
    let mut offset = 0;
    for raw_line in text.split_inclusive('\n') {
        let line_start = offset;
        offset += raw_line.len();
        let trimmed = raw_line.trim();
        if trimmed.starts_with('[') {
            if section_start.is_some() {
                break;
            }
            if in_pyproject && is_tpulint_table(trimmed) {
                section_start = Some(offset);
            }
            continue;
        }
        if section_start.is_some()
            && let Some(rest) = trimmed.strip_prefix("backend")
            && rest.trim_start().starts_with('=')
        {
            let indent = raw_line.len() - raw_line.trim_start().len();
            let key_value = &raw_line[indent..];
            let end = indent + key_value_end(key_value);
            return Edit::replace(line_start + indent..line_start + end, line);
        }
    }
    match section_start {
        Some(at) => {
            let separator = if text[..at].is_empty() || text[..at].ends_with('\n') {
                ""
            } else {
                newline
            };
            Edit::insert(at, format!("{separator}{line}{newline}"))
        }
        None => {
            let separator = match text {
                "" => "",
                _ if text.ends_with('\n') => newline,
                _ => "\n\n",
            };
            Edit::insert(
                text.len(),
                format!("{separator}[tool.tpulint]{newline}{line}{newline}"),
            )
        }
    }
}

/// The length of `key = value` at the start of `line`, without a trailing comment or spaces.
fn key_value_end(line: &str) -> usize {
    let mut quote = None;
    let mut end = line.len();
    for (at, character) in line.char_indices() {
        match (quote, character) {
            (None, '"' | '\'') => quote = Some(character),
            (Some(open), _) if character == open => quote = None,
            (None, '#' | '\r' | '\n') => {
                end = at;
                break;
            }
            _ => {}
        }
    }
    line[..end].trim_end().len()
}

/// Whether a header line is `[tool.tpulint]` (spaces around the dot and a trailing comment
/// allowed; an array of tables is not).
fn is_tpulint_table(header: &str) -> bool {
    let Some(inner) = header.strip_prefix('[') else {
        return false;
    };
    if inner.starts_with('[') {
        return false;
    }
    let Some(end) = inner.find(']') else {
        return false;
    };
    let name: Vec<&str> = inner[..end].split('.').map(str::trim).collect();
    name == ["tool", "tpulint"]
}

/// The content of a new `tpulint.toml` that sets the backend.
pub fn new_config_with_backend(backend: &str) -> String {
    format!("backend = \"{backend}\"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(file_name: &str, text: &str) -> String {
        let edit = set_backend(file_name, text, "torch_xla");
        let mut out = text.to_string();
        out.replace_range(edit.range, &edit.content);
        out
    }

    #[test]
    fn pyproject_gets_the_key_under_its_table() {
        assert_eq!(
            apply(
                "pyproject.toml",
                "[project]\nname = \"x\"\n\n[tool.tpulint]\nselect = [\"TPU1\"]\n\n[tool.ruff]\nline-length = 99\n"
            ),
            "[project]\nname = \"x\"\n\n[tool.tpulint]\nbackend = \"torch_xla\"\nselect = [\"TPU1\"]\n\n[tool.ruff]\nline-length = 99\n"
        );
        assert_eq!(
            apply(
                "pyproject.toml",
                "[tool.tpulint]\nbackend = \"auto\"  # keep\n"
            ),
            "[tool.tpulint]\nbackend = \"torch_xla\"  # keep\n"
        );
        assert_eq!(
            apply("pyproject.toml", "[tool.tpulint]"),
            "[tool.tpulint]\nbackend = \"torch_xla\"\n"
        );
        assert_eq!(
            apply("pyproject.toml", "[project]\nname = \"x\"\n"),
            "[project]\nname = \"x\"\n\n[tool.tpulint]\nbackend = \"torch_xla\"\n"
        );
    }

    #[test]
    fn tpulint_toml_gets_a_top_level_key() {
        assert_eq!(
            apply(
                "tpulint.toml",
                "select = [\"ALL\"]\n\n[per-file-ignores]\n\"t/*\" = [\"TPU1\"]\n"
            ),
            "backend = \"torch_xla\"\nselect = [\"ALL\"]\n\n[per-file-ignores]\n\"t/*\" = [\"TPU1\"]\n"
        );
        assert_eq!(
            apply(".tpulint.toml", "backend = 'torchtpu'\r\n"),
            "backend = \"torch_xla\"\r\n"
        );
        assert_eq!(apply("tpulint.toml", ""), "backend = \"torch_xla\"\n");
        // A `backend` key inside another table is not the top-level one.
        assert_eq!(
            apply("tpulint.toml", "[lint]\nbackend = \"x\"\n"),
            "backend = \"torch_xla\"\n[lint]\nbackend = \"x\"\n"
        );
    }
}
