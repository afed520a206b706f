//! `tpulint check` on Jupyter notebooks: findings located per cell (text, concise and JSON
//! snapshots), magics tolerated, noqa in cells, `--fix` and `--diff` touching only code cells'
//! sources, stdin with `--stdin-filename x.ipynb`, nbformat 4.0 to 4.5, and one-line errors.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A PyTorch/XLA notebook in Jupyter's own layout (indent 1, nbformat 4.5 with cell ids):
/// markdown, shell and magic lines, a `%%bash` cell, outputs, a `# noqa`, and findings in two
/// cells whose fixes depend on an import in another.
const NOTEBOOK: &str = include_str!("fixtures/tpu_training.ipynb");

fn tpulint(directory: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tpulint"))
        .args(args)
        .current_dir(directory)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tpulint");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(input.as_bytes()).expect("write stdin");
    }
    child.wait_with_output().expect("wait")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let directory = tempfile::tempdir().expect("temporary directory");
    for (name, content) in files {
        let path = directory.path().join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }
    directory
}

/// Everything but the code cells' sources, for comparing a notebook before and after a fix.
fn without_code_sources(notebook: &str) -> Value {
    let mut value: Value = serde_json::from_str(notebook).expect("valid JSON");
    for cell in value["cells"].as_array_mut().expect("cells") {
        if cell["cell_type"] == "code" {
            cell["source"] = Value::Null;
        }
    }
    value
}

#[test]
fn a_directory_walk_checks_notebooks_per_cell() {
    let directory = project(&[("nb/tpu_training.ipynb", NOTEBOOK)]);
    let output = tpulint(directory.path(), &["check"], None);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    insta::assert_snapshot!("notebook_text", stdout(&output));

    let output = tpulint(
        directory.path(),
        &["check", "--output-format", "concise"],
        None,
    );
    insta::assert_snapshot!("notebook_concise", stdout(&output));
}

#[test]
fn json_has_the_cell_and_rows_inside_it() {
    let directory = project(&[("tpu_training.ipynb", NOTEBOOK)]);
    let output = tpulint(
        directory.path(),
        &["check", "--output-format", "json", "tpu_training.ipynb"],
        None,
    );
    let root = directory
        .path()
        .canonicalize()
        .expect("canonical")
        .to_string_lossy()
        .into_owned();
    let text = stdout(&output)
        .replace(&root, "[TMP]")
        .replace(&directory.path().to_string_lossy().into_owned(), "[TMP]");
    insta::assert_snapshot!("notebook_json", text);
    let diagnostics: Value = serde_json::from_str(&text).expect("JSON");
    let cells: Vec<_> = diagnostics
        .as_array()
        .expect("list")
        .iter()
        .map(|diagnostic| (diagnostic["code"].clone(), diagnostic["cell"].clone()))
        .collect();
    // The `# noqa: TPU401` line in cell 3, the markdown cell and the `%%bash` cell report
    // nothing; the magic lines of cells 2 and 5 are no syntax errors.
    assert_eq!(
        cells,
        [
            (Value::from("TPU602"), Value::from(3)),
            (Value::from("TPU401"), Value::from(3)),
            (Value::from("TPU601"), Value::from(5)),
        ]
    );
}

/// The `(line, column)` in `notebook`'s JSON text of `needle`'s first occurrence inside a
/// JSON string, 1-based, columns in characters.
fn json_position(notebook: &str, needle: &str) -> (usize, usize) {
    let (line, text) = notebook
        .lines()
        .enumerate()
        .find(|(_, line)| line.contains(needle))
        .expect("needle in the notebook");
    let byte = text.find(needle).unwrap();
    (line + 1, text[..byte].chars().count() + 1)
}

#[test]
fn ci_formats_point_at_the_notebook_json_line() {
    let directory = project(&[("tpu_training.ipynb", NOTEBOOK)]);
    let json = tpulint(
        directory.path(),
        &["check", "--output-format", "json", "tpu_training.ipynb"],
        None,
    );
    let findings: Value = serde_json::from_str(&stdout(&json)).expect("JSON");
    let first = &findings[0];
    let (cell, row, column) = (
        first["cell"].as_u64().unwrap(),
        first["location"]["row"].as_u64().unwrap() as usize,
        first["location"]["column"].as_u64().unwrap() as usize,
    );
    // The finding's own line of its cell, as the notebook model reads it.
    let model: Value = serde_json::from_str(NOTEBOOK).unwrap();
    let source = &model["cells"][cell as usize - 1]["source"];
    let line = source.as_array().map_or_else(
        || {
            source
                .as_str()
                .unwrap()
                .lines()
                .nth(row - 1)
                .unwrap()
                .to_string()
        },
        |lines| lines[row - 1].as_str().unwrap().to_string(),
    );
    let needle = line.trim_end_matches('\n');
    let (json_line, json_column) = {
        let quoted = serde_json::to_string(needle).unwrap();
        json_position(NOTEBOOK, &quoted[1..quoted.len() - 1])
    };
    // Inside the string, the finding's column (no escapes precede it on these lines).
    let expected = (json_line, json_column + column - 1);

    let github = tpulint(
        directory.path(),
        &["check", "--output-format", "github", "tpu_training.ipynb"],
        None,
    );
    let annotation = stdout(&github).lines().next().unwrap().to_string();
    assert!(
        annotation.contains(&format!(",line={},col={},", expected.0, expected.1)),
        "{annotation} (expected {expected:?})"
    );
    assert!(
        annotation.contains(&format!("::cell {cell}, line {row}, col {column}: ")),
        "{annotation}"
    );

    let sarif = tpulint(
        directory.path(),
        &["check", "--output-format", "sarif", "tpu_training.ipynb"],
        None,
    );
    let log: Value = serde_json::from_str(&stdout(&sarif)).expect("SARIF");
    let result = &log["runs"][0]["results"][0];
    let region = &result["locations"][0]["physicalLocation"]["region"];
    assert_eq!(
        (region["startLine"].as_u64(), region["startColumn"].as_u64()),
        (Some(expected.0 as u64), Some(expected.1 as u64)),
        "{result}"
    );
    assert_eq!(result["properties"]["cell"], cell);
    assert_eq!(result["properties"]["row"], row);
    // Replacements would be edits of the JSON text: notebooks are fixed with `--fix` only.
    assert!(
        log["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|result| result.get("fixes").is_none())
    );

    let gitlab = tpulint(
        directory.path(),
        &["check", "--output-format", "gitlab", "tpu_training.ipynb"],
        None,
    );
    let issues: Value = serde_json::from_str(&stdout(&gitlab)).expect("GitLab JSON");
    assert_eq!(issues[0]["location"]["lines"]["begin"], expected.0);
}

#[test]
fn fix_rewrites_only_code_cell_sources_and_keeps_the_layout() {
    let directory = project(&[("tpu_training.ipynb", NOTEBOOK)]);
    let output = tpulint(
        directory.path(),
        &["check", "--fix", "--unsafe-fixes", "tpu_training.ipynb"],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let fixed = std::fs::read_to_string(directory.path().join("tpu_training.ipynb")).expect("read");
    assert_eq!(without_code_sources(&fixed), without_code_sources(NOTEBOOK));
    // Byte for byte: only the three fixed lines differ, in Jupyter's layout.
    let expected = NOTEBOOK
        .replace(
            r#""device = xm.xla_device()\n","#,
            r#""device = torch_xla.device()\n","#,
        )
        .replace(
            r#""x = torch.ones(2, device=\"cuda\")\n","#,
            r#""x = torch.ones(2, device=\"xla\")\n","#,
        )
        .replace(r#""    xm.mark_step()\n""#, r#""    torch_xla.sync()\n""#);
    assert_eq!(fixed, expected);
    let again = tpulint(directory.path(), &["check", "tpu_training.ipynb"], None);
    assert_eq!(again.status.code(), Some(0), "{}", stdout(&again));
}

#[test]
fn diff_shows_each_changed_cell_and_changes_nothing() {
    let directory = project(&[("tpu_training.ipynb", NOTEBOOK)]);
    let output = tpulint(
        directory.path(),
        &["check", "--diff", "tpu_training.ipynb"],
        None,
    );
    assert_eq!(output.status.code(), Some(1));
    insta::assert_snapshot!("notebook_diff", stdout(&output));
    assert_eq!(stderr(&output), "Would fix 2 diagnostics in 1 file.\n");
    let after = std::fs::read_to_string(directory.path().join("tpu_training.ipynb")).expect("read");
    assert_eq!(after, NOTEBOOK);
}

#[test]
fn stdin_with_a_notebook_filename() {
    let directory = project(&[]);
    let output = tpulint(
        directory.path(),
        &[
            "check",
            "--output-format",
            "concise",
            "--stdin-filename",
            "x.ipynb",
            "-",
        ],
        Some(NOTEBOOK),
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).starts_with("x.ipynb:cell 3:1:10: TPU602"),
        "{}",
        stdout(&output)
    );
    let output = tpulint(
        directory.path(),
        &["check", "--fix", "--stdin-filename", "x.ipynb", "-"],
        Some(NOTEBOOK),
    );
    let fixed = stdout(&output);
    assert_eq!(without_code_sources(&fixed), without_code_sources(NOTEBOOK));
    assert!(fixed.contains("torch_xla.sync()") && !fixed.contains("xm.mark_step()\\n"));
}

#[test]
fn empty_markdown_only_and_old_minor_versions() {
    let empty = r#"{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 2}"#;
    let markdown = r##"{"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# xm.mark_step()"]}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 4}"##;
    // nbformat 4.0: no cell ids, sources as one string.
    let version_4_0 = "{\"cells\": [{\"cell_type\": \"code\", \"execution_count\": null, \"metadata\": {}, \"outputs\": [], \"source\": \"import torch_xla.core.xla_model as xm\\nxm.mark_step()\\n\"}], \"metadata\": {}, \"nbformat\": 4, \"nbformat_minor\": 0}";
    let directory = project(&[
        ("empty.ipynb", empty),
        ("markdown.ipynb", markdown),
        ("v40.ipynb", version_4_0),
    ]);
    let output = tpulint(
        directory.path(),
        &["check", "--output-format", "concise"],
        None,
    );
    assert_eq!(
        stdout(&output).lines().next(),
        Some(
            "v40.ipynb:cell 1:2:1: TPU601 [*] `xm.mark_step` is deprecated; use `torch_xla.sync()`"
        )
    );
    let output = tpulint(directory.path(), &["check", "--fix", "v40.ipynb"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let fixed = std::fs::read_to_string(directory.path().join("v40.ipynb")).expect("read");
    assert_eq!(
        fixed,
        // The fix adds the import it needs, inside the cell.
        version_4_0.replace(
            "xm.mark_step()\\n",
            "import torch_xla\\ntorch_xla.sync()\\n"
        )
    );
    for name in ["empty.ipynb", "markdown.ipynb"] {
        let output = tpulint(directory.path(), &["check", name], None);
        assert_eq!(output.status.code(), Some(0), "{name}: {}", stdout(&output));
    }
}

#[test]
fn a_broken_notebook_is_one_line_and_exit_2() {
    let directory = project(&[
        ("broken.ipynb", "{\"cells\": [\n"),
        ("v3.ipynb", r#"{"nbformat": 3, "worksheets": []}"#),
        ("good.py", "x = 1\n"),
    ]);
    // Like any file that cannot be read, a broken notebook is one `io-error` diagnostic (ruff's
    // E902) and exit 2.
    for (name, message) in [
        (
            "broken.ipynb",
            "broken.ipynb:1:1: io-error: not a valid notebook: invalid JSON at line 2 column 0: EOF while parsing a list\n",
        ),
        (
            "v3.ipynb",
            "v3.ipynb:1:1: io-error: unsupported notebook format 3 (tpulint reads nbformat 4; convert it with `jupyter nbconvert --to notebook`)\n",
        ),
    ] {
        let output = tpulint(
            directory.path(),
            &["check", "--fix", "--output-format", "concise", name],
            None,
        );
        assert_eq!(output.status.code(), Some(2), "{name}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.starts_with(message), "{stdout}");
    }
    let broken = std::fs::read_to_string(directory.path().join("broken.ipynb")).expect("read");
    assert_eq!(broken, "{\"cells\": [\n", "never written");
}
