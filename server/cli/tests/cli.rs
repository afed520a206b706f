//! End-to-end tests of the `tpulint` binary: every output format, exit codes, fixing (`--fix`,
//! `--diff`, `--unsafe-fixes`, BOM and CRLF kept), stdin, configuration discovery and its
//! errors, per-file-ignores, exclude, .gitignore, and the `rule` subcommand.
//!
//! Each test builds a small project in a temporary directory and runs the built binary in it
//! (`common/`). Syntax errors, I/O errors and safe writes are in `io.rs`; the ruff-style flags
//! (`--output-file`, `--fail-on`, `--fix-only`, `--add-noqa`, `--watch`, …) in `flags.rs`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;

use common::*;

#[test]
fn text_output_shows_source_carets_and_summary() {
    let project = cuda_project();
    let run = project.run(&["check"]);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    let stdout = run.stdout();
    assert!(
        stdout.contains("TPU401 Hard-coded CUDA device `cuda` [error]"),
        "{stdout}"
    );
    assert!(stdout.contains(" --> pkg/train.py:3:23"), "{stdout}");
    assert!(
        stdout.contains("3 | device = torch.device(\"cuda\")"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  |                       ^^^^^^"),
        "{stdout}"
    );
    assert!(stdout.contains("Found "), "{stdout}");
    assert!(stdout.contains("[*] 1 fixable with `--fix`."), "{stdout}");
}

#[test]
fn concise_output_is_one_line_per_diagnostic() {
    let project = cuda_project();
    let run = project.run(&["check", "--output-format", "concise", "--quiet"]);
    assert_eq!(run.code(), 1);
    let stdout = run.stdout();
    for line in stdout.lines() {
        let parts: Vec<&str> = line.splitn(4, ':').collect();
        assert_eq!(parts.len(), 4, "not path:row:col: message: {line}");
        assert!(parts[1].parse::<usize>().is_ok() && parts[2].parse::<usize>().is_ok());
    }
    assert!(stdout.contains("pkg/train.py:3:23: TPU401 Hard-coded CUDA device `cuda`"));
    assert!(
        stdout.contains("pkg/xla_step.py:6:5: TPU601 [*] "),
        "{stdout}"
    );
    // Output is sorted by path.
    let first_train = stdout.find("pkg/train.py").expect("train");
    let first_xla = stdout.find("pkg/xla_step.py").expect("xla");
    assert!(first_train < first_xla);
}

#[test]
fn json_output_follows_ruffs_schema() {
    let project = cuda_project();
    let run = project.run(&["check", "--output-format", "json"]);
    assert_eq!(run.code(), 1);
    let items = run.json();
    let items = items.as_array().expect("a list");
    assert!(!items.is_empty());
    let ruff_keys: BTreeSet<&str> = [
        "cell",
        "code",
        "end_location",
        "filename",
        "fix",
        "location",
        "message",
        "name",
        "noqa_row",
        "severity",
        "url",
    ]
    .into();
    for item in items {
        let object = item.as_object().expect("object");
        let keys: BTreeSet<&str> = object.keys().map(String::as_str).collect();
        assert_eq!(keys, ruff_keys);
        assert!(item["cell"].is_null());
        let filename = item["filename"].as_str().expect("filename");
        assert!(Path::new(filename).is_absolute(), "{filename}");
        for key in ["location", "end_location"] {
            assert!(item[key]["row"].as_u64().expect("row") >= 1);
            assert!(item[key]["column"].as_u64().expect("column") >= 1);
        }
        assert_eq!(item["noqa_row"], item["location"]["row"]);
        assert!(item["url"].as_str().expect("url").ends_with(".md"));
        if let Some(fix) = item["fix"].as_object() {
            let applicability = fix["applicability"].as_str().expect("applicability");
            assert!(["safe", "unsafe", "display-only"].contains(&applicability));
            assert!(fix["message"].is_string());
            for edit in fix["edits"].as_array().expect("edits") {
                let keys: BTreeSet<&str> = edit
                    .as_object()
                    .expect("edit")
                    .keys()
                    .map(String::as_str)
                    .collect();
                assert_eq!(keys, ["content", "end_location", "location"].into());
            }
        } else {
            assert!(item["fix"].is_null());
        }
    }
    let cuda = items
        .iter()
        .find(|item| item["code"] == "TPU401")
        .expect("TPU401");
    assert_eq!(cuda["location"]["row"], 3);
    assert_eq!(cuda["location"]["column"], 23);
    assert_eq!(cuda["end_location"]["column"], 29);
    let safe = items
        .iter()
        .find(|item| item["code"] == "TPU601")
        .expect("TPU601");
    assert_eq!(safe["fix"]["applicability"], "safe");
}

#[test]
fn json_output_is_an_empty_list_when_clean() {
    let project = Project::new(&[("clean.py", CLEAN_SCRIPT)]);
    let run = project.run(&["check", "--output-format", "json"]);
    assert_eq!(run.code(), 0);
    assert_eq!(run.json(), Value::Array(Vec::new()));
}

#[test]
fn github_output_is_workflow_annotations() {
    let project = cuda_project();
    let run = project.run(&["check", "--output-format", "github"]);
    assert_eq!(run.code(), 1);
    let stdout = run.stdout();
    assert!(
        stdout.contains(
            "::error title=tpulint (TPU401),file=pkg/train.py,line=3,col=23,endLine=3,endColumn=29::Hard-coded CUDA device `cuda`"
        ),
        "{stdout}"
    );
    for line in stdout.lines() {
        assert!(
            line.starts_with("::error ")
                || line.starts_with("::warning ")
                || line.starts_with("::notice "),
            "{line}"
        );
    }
}

#[test]
fn sarif_output_has_required_fields_and_rule_metadata() {
    let project = cuda_project();
    let run = project.run(&["check", "--output-format", "sarif"]);
    assert_eq!(run.code(), 1);
    let log = run.json();
    assert_eq!(log["version"], "2.1.0");
    assert!(log["$schema"].as_str().expect("$schema").contains("sarif"));
    let run0 = &log["runs"][0];
    let driver = &run0["tool"]["driver"];
    assert_eq!(driver["name"], "tpulint");
    let rules = driver["rules"].as_array().expect("rules");
    assert!(rules.len() >= 3);
    for rule in rules {
        for key in [
            "id",
            "name",
            "shortDescription",
            "fullDescription",
            "helpUri",
            "defaultConfiguration",
        ] {
            assert!(!rule[key].is_null(), "rule lacks {key}: {rule}");
        }
        assert!(
            ["error", "warning", "note"].contains(
                &rule["defaultConfiguration"]["level"]
                    .as_str()
                    .expect("level")
            )
        );
    }
    let results = run0["results"].as_array().expect("results");
    assert!(!results.is_empty());
    for result in results {
        let rule_index = result["ruleIndex"].as_u64().expect("ruleIndex") as usize;
        assert_eq!(rules[rule_index]["id"], result["ruleId"]);
        assert!(result["message"]["text"].is_string());
        let region = &result["locations"][0]["physicalLocation"]["region"];
        assert!(region["startLine"].as_u64().expect("startLine") >= 1);
        let uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .expect("uri");
        assert!(uri.starts_with("file:///"), "{uri}");
    }
}

#[test]
fn statistics_count_per_rule() {
    let project = cuda_project();
    let run = project.run(&["check", "--statistics"]);
    assert_eq!(run.code(), 1);
    let stdout = run.stdout();
    assert!(
        stdout.contains("1\tTPU401\t[ ] cuda-device-string"),
        "{stdout}"
    );
    assert!(
        stdout.contains("1\tTPU601\t[*] deprecated-mark-step"),
        "{stdout}"
    );
    let json = project.run(&["check", "--statistics", "--output-format", "json"]);
    let rows = json.json();
    assert!(
        rows.as_array()
            .expect("rows")
            .iter()
            .any(|row| row["code"] == "TPU401" && row["count"] == 1)
    );
}

#[test]
fn exit_codes() {
    let clean = Project::new(&[("clean.py", CLEAN_SCRIPT)]);
    let run = clean.run(&["check"]);
    assert_eq!(run.code(), 0);
    assert!(run.stdout().contains("All checks passed!"));

    let project = cuda_project();
    assert_eq!(project.run(&["check"]).code(), 1);
    assert_eq!(project.run(&["check", "--exit-zero"]).code(), 0);
    // A missing path is an `io-error` diagnostic (see io.rs), still exit 2.
    assert_eq!(project.run(&["check", "missing.py"]).code(), 2);

    for args in [
        &["check", "--select", "TPU999"][..],
        &["check", "--ignore", "nonsense"],
        &["check", "--backend", "cuda"],
        &["check", "--config", "nowhere.toml"],
        &["rule", "TPU999"],
    ] {
        let run = project.run(args);
        assert_eq!(run.code(), 2, "{args:?}: {}", run.stderr());
        let stderr = run.stderr();
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // Usage errors are clap's, still exit 2.
    assert_eq!(project.run(&["check", "--output-format", "xml"]).code(), 2);
    assert_eq!(project.run(&["frobnicate"]).code(), 2);
}

#[test]
fn select_ignore_and_extend_select() {
    let project = cuda_project();
    let only = project.run(&["check", "--select", "TPU401", "--output-format", "concise"]);
    assert_eq!(only.codes(), vec!["TPU401"]);
    let family = project.run(&["check", "--select", "TPU4", "--ignore", "TPU401", "-q"]);
    assert!(!family.stdout().contains("TPU401"));
    assert!(family.stdout().contains("TPU403"));
    let by_name = project.run(&[
        "check",
        "--select",
        "cuda-device-string,TPU601",
        "--output-format",
        "concise",
    ]);
    assert_eq!(by_name.codes(), vec!["TPU401", "TPU601"]);
    let extended = project.run(&[
        "check",
        "--select",
        "TPU401",
        "--extend-select",
        "TPU403",
        "--output-format",
        "concise",
    ]);
    assert_eq!(extended.codes(), vec!["TPU401", "TPU403"]);
}

#[test]
fn fix_applies_safe_fixes_and_keeps_bom_and_crlf() {
    let crlf = XLA_SCRIPT.replace('\n', "\r\n");
    let mut content = b"\xEF\xBB\xBF".to_vec();
    content.extend_from_slice(crlf.as_bytes());
    let project = Project::new(&[]);
    project.write("step.py", &content);
    let run = project.run(&["check", "--fix", "--select", "TPU601"]);
    assert_eq!(run.code(), 0, "{}{}", run.stdout(), run.stderr());
    let fixed = project.read("step.py");
    assert!(fixed.starts_with(b"\xEF\xBB\xBF"), "BOM lost");
    let text = String::from_utf8(fixed[3..].to_vec()).expect("utf-8");
    assert!(text.contains("torch_xla.sync()"), "{text}");
    assert!(!text.contains("mark_step"), "{text}");
    let lone_lf = text
        .as_bytes()
        .windows(2)
        .any(|pair| pair[1] == b'\n' && pair[0] != b'\r')
        || text.starts_with('\n');
    assert!(!lone_lf, "line endings changed: {text:?}");
    assert!(run.stdout().contains("1 fixed"), "{}", run.stdout());
}

#[test]
fn fix_leaves_unsafe_fixes_unless_asked() {
    let project = Project::new(&[(
        "train.py",
        "import torch\nimport torch_xla\n\nx = torch.zeros(3, device=\"cuda\")\n",
    )]);
    let run = project.run(&["check", "--fix", "--select", "TPU401"]);
    assert_eq!(run.code(), 1);
    assert!(
        String::from_utf8(project.read("train.py"))
            .unwrap()
            .contains("\"cuda\"")
    );
    assert!(
        run.stdout()
            .contains("1 hidden fix can be enabled with `--unsafe-fixes`"),
        "{}",
        run.stdout()
    );

    let run = project.run(&["check", "--fix", "--unsafe-fixes", "--select", "TPU401"]);
    assert_eq!(run.code(), 0, "{}", run.stdout());
    let text = String::from_utf8(project.read("train.py")).unwrap();
    assert!(text.contains("device=\"xla\""), "{text}");
}

#[test]
fn show_fixes_lists_what_was_fixed() {
    let project = Project::new(&[("step.py", XLA_SCRIPT)]);
    let run = project.run(&["check", "--fix", "--show-fixes", "--select", "TPU601"]);
    assert_eq!(run.code(), 0);
    assert!(
        run.stdout()
            .contains("Fixed 1 diagnostic:\n- step.py:\n    1 × TPU601 (deprecated-mark-step)"),
        "{}",
        run.stdout()
    );
    let project = Project::new(&[("step.py", XLA_SCRIPT)]);
    let run = project.run(&["check", "--show-fixes", "--select", "TPU601"]);
    assert!(run.stdout().contains("Safe fix:\n--- before\n+++ after"));
}

#[test]
fn diff_prints_changes_without_writing() {
    let project = Project::new(&[("step.py", XLA_SCRIPT), ("clean.py", CLEAN_SCRIPT)]);
    let run = project.run(&["check", "--diff"]);
    assert_eq!(run.code(), 1);
    let stdout = run.stdout();
    assert!(
        stdout.contains("--- a/step.py\n+++ b/step.py\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("-    xm.mark_step()\n+    torch_xla.sync()\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("clean.py"));
    assert!(run.stderr().contains("Would fix 1 diagnostic in 1 file."));
    assert_eq!(project.read("step.py"), XLA_SCRIPT.as_bytes());

    let clean = Project::new(&[("clean.py", CLEAN_SCRIPT)]);
    let run = clean.run(&["check", "--diff"]);
    assert_eq!(run.code(), 0);
    assert!(run.stdout().is_empty());
    // --diff and --fix contradict each other.
    assert_eq!(clean.run(&["check", "--diff", "--fix"]).code(), 2);
}

#[test]
fn stdin_is_checked_and_fixed() {
    let project = Project::new(&[("tpulint.toml", "select = [\"TPU401\", \"TPU601\"]\n")]);
    let run = project.run_in(
        ".",
        &[
            "check",
            "-",
            "--stdin-filename",
            "src/train.py",
            "--output-format",
            "concise",
        ],
        Some(CUDA_SCRIPT.as_bytes()),
    );
    assert_eq!(run.code(), 1);
    assert_eq!(run.codes(), vec!["TPU401"]);
    assert!(run.stdout().starts_with("src/train.py:3:23: TPU401"));

    let run = project.run_in(".", &["check", "-", "--fix"], Some(XLA_SCRIPT.as_bytes()));
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(run.stdout().contains("torch_xla.sync()"));
    assert!(run.stdout().starts_with("import torch_xla\n"));
    assert!(run.stderr().contains("1 fixed"), "{}", run.stderr());
}

#[test]
fn configuration_is_discovered_from_the_nearest_file() {
    let project = Project::new(&[
        (
            "pyproject.toml",
            "[project]\nname = \"demo\"\n\n[tool.tpulint]\nselect = [\"TPU401\"]\n",
        ),
        ("src/pkg/train.py", CUDA_SCRIPT),
        // A nested project with its own configuration.
        ("src/other/tpulint.toml", "select = [\"TPU403\"]\n"),
        ("src/other/train.py", CUDA_SCRIPT),
    ]);
    let run = project.run(&["check", "--output-format", "concise"]);
    assert_eq!(
        run.path_codes(),
        vec!["src/other/train.py TPU403", "src/pkg/train.py TPU401"]
    );
    // From a subdirectory, the configuration above it still applies.
    let run = project.run_in("src/pkg", &["check", "--output-format", "concise"], None);
    assert_eq!(run.codes(), vec!["TPU401"]);
    // --config overrides discovery; the command line overrides the file.
    let run = project.run(&[
        "check",
        "--config",
        "src/other/tpulint.toml",
        "src/pkg",
        "--output-format",
        "concise",
    ]);
    assert_eq!(run.codes(), vec!["TPU403"]);
    let run = project.run(&["check", "--select", "TPU101", "--output-format", "concise"]);
    assert_eq!(run.codes(), vec!["TPU101", "TPU101"]);
}

#[test]
fn pyproject_without_section_is_skipped() {
    let project = Project::new(&[
        ("tpulint.toml", "select = [\"TPU403\"]\n"),
        ("app/pyproject.toml", "[project]\nname = \"app\"\n"),
        ("app/train.py", CUDA_SCRIPT),
    ]);
    let run = project.run(&["check", "--output-format", "concise"]);
    assert_eq!(run.codes(), vec!["TPU403"]);
}

#[test]
fn configuration_errors_are_one_line_and_exit_2() {
    let cases = [
        (
            "pyproject.toml",
            "[tool.tpulint]\nselect = [\"TPU401\"]\nselct = [\"TPU1\"]\n",
            "pyproject.toml:3: `tool.tpulint.selct`: unknown key",
        ),
        (
            "pyproject.toml",
            "[tool.tpulint]\nignore = [\"TPU4O1\"]\n",
            "pyproject.toml:2: `tool.tpulint.ignore`: unknown rule selector `TPU4O1`",
        ),
        (
            "tpulint.toml",
            "backend = \"rocm\"\n",
            "tpulint.toml:1: `backend`: unknown backend `rocm`",
        ),
        (
            "tpulint.toml",
            "[per-file-ignores]\n\"tests/*\" = \"TPU1\"\n",
            "expected a list of strings, found a string",
        ),
        ("tpulint.toml", "select = [\"TPU1\"\n", "tpulint.toml:"),
    ];
    for (name, content, expected) in cases {
        let project = Project::new(&[(name, content), ("train.py", CUDA_SCRIPT)]);
        let run = project.run(&["check"]);
        assert_eq!(run.code(), 2, "{content}");
        let stderr = run.stderr();
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(stderr.contains(expected), "{content}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(run.stdout().is_empty());
    }
}

#[test]
fn per_file_ignores_and_exclude() {
    let project = Project::new(&[
        (
            "pyproject.toml",
            "[tool.tpulint]\nselect = [\"TPU4\"]\nexclude = [\"vendor\", \"generated_*.py\"]\n\n[tool.tpulint.per-file-ignores]\n\"tests/*\" = [\"TPU401\"]\n",
        ),
        ("train.py", CUDA_SCRIPT),
        ("tests/test_train.py", CUDA_SCRIPT),
        ("vendor/lib.py", CUDA_SCRIPT),
        ("generated_model.py", CUDA_SCRIPT),
    ]);
    let run = project.run(&["check", "--output-format", "concise"]);
    let stdout = run.stdout();
    assert!(stdout.contains("train.py:3:23: TPU401"), "{stdout}");
    assert!(
        stdout.contains("tests/test_train.py:8:25: TPU403"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("tests/test_train.py:3:23: TPU401"),
        "{stdout}"
    );
    assert!(!stdout.contains("vendor/"), "{stdout}");
    assert!(!stdout.contains("generated_model.py"), "{stdout}");
    // A file named explicitly is checked even when excluded, as in ruff.
    let run = project.run(&["check", "vendor/lib.py", "--output-format", "concise"]);
    assert!(run.stdout().contains("vendor/lib.py:3:23: TPU401"));
    // --extend-exclude adds patterns.
    let run = project.run(&[
        "check",
        "--extend-exclude",
        "tests",
        "--output-format",
        "concise",
    ]);
    assert!(!run.stdout().contains("tests/"));
}

#[test]
fn gitignored_hidden_and_default_excluded_directories_are_skipped() {
    let project = Project::new(&[
        (".gitignore", "ignored/\n"),
        ("ignored/a.py", CUDA_SCRIPT),
        (".hidden/b.py", CUDA_SCRIPT),
        ("venv/lib/c.py", CUDA_SCRIPT),
        ("build/d.py", CUDA_SCRIPT),
        (
            "kept/e.pyi",
            "import torch\nx = torch.zeros(1, device=\"cuda\")\n",
        ),
        ("kept/notes.txt", "device = \"cuda\"\n"),
    ]);
    let run = project.run(&[
        "check",
        "-q",
        "--select",
        "TPU401",
        "--output-format",
        "concise",
    ]);
    assert_eq!(
        run.stdout(),
        "kept/e.pyi:2:27: TPU401 Hard-coded CUDA device `cuda`\n"
    );
}

#[test]
fn invalid_utf8_is_checked_but_never_written() {
    let mut content =
        b"import torch_xla\nimport torch_xla.core.xla_model as xm\n# caf\xe9\n".to_vec();
    content.extend_from_slice(b"xm.mark_step()\n");
    let project = Project::new(&[]);
    project.write("latin1.py", &content);
    let run = project.run(&["check", "--fix", "--select", "TPU601"]);
    assert_eq!(run.code(), 1);
    assert!(run.stderr().contains("warning: latin1.py: not valid UTF-8"));
    assert_eq!(project.read("latin1.py"), content);
}

#[test]
fn rule_subcommand() {
    let project = Project::new(&[]);
    let run = project.run(&["rule", "TPU401"]);
    assert_eq!(run.code(), 0);
    let stdout = run.stdout();
    assert!(
        stdout.starts_with("# cuda-device-string (TPU401)\n"),
        "{stdout}"
    );
    assert!(stdout.contains("## What it does"));
    assert!(stdout.contains("## Why is this bad?"));

    let by_name = project.run(&["rule", "tensor-item-in-hot-path"]);
    assert!(
        by_name
            .stdout()
            .starts_with("# tensor-item-in-hot-path (TPU101)")
    );

    let table = project.run(&["rule", "--all"]);
    assert_eq!(table.code(), 0);
    let lines: Vec<String> = table.stdout().lines().map(str::to_string).collect();
    assert!(lines[0].starts_with("CODE    NAME"));
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("TPU401  cuda-device-string"))
    );

    let json = project.run(&["rule", "--all", "--output-format", "json"]);
    let rules = json.json();
    let rules = rules.as_array().expect("list");
    assert_eq!(rules.len(), lines.len() - 1);
    for rule in rules {
        for key in [
            "code", "name", "family", "severity", "fix", "summary", "url",
        ] {
            assert!(rule[key].is_string(), "{key}: {rule}");
        }
    }
    assert_eq!(project.run(&["rule"]).code(), 2);
}

/// README's first command: the bundled example project shows findings from every flavour of
/// code, honours its `exclude` and `per-file-ignores`, and prints no warnings or errors.
#[test]
fn example_project_checks_cleanly_with_findings() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let output = Command::new(env!("CARGO_BIN_EXE_tpulint"))
        .args(["check", ".", "--output-format", "json"])
        .current_dir(&examples)
        .output()
        .expect("run tpulint");
    let run = Run(output);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    assert!(run.stderr().is_empty(), "{}", run.stderr());
    let items = run.json();
    let items = items.as_array().expect("list");
    let files: BTreeSet<String> = items
        .iter()
        .map(|item| {
            let filename = item["filename"].as_str().expect("filename");
            let relative = filename.split("examples/").last().expect("under examples");
            relative.split('/').next().expect("directory").to_string()
        })
        .collect();
    for directory in ["cuda_port", "xla", "torchtpu"] {
        assert!(
            files.contains(directory),
            "no findings in {directory}: {files:?}"
        );
    }
    assert!(!files.contains("third_party"), "exclude ignored");
    let codes: BTreeSet<&str> = items
        .iter()
        .map(|item| item["code"].as_str().expect("code"))
        .collect();
    for family in ["TPU1", "TPU3", "TPU4", "TPU6", "TPU7", "TPU8"] {
        assert!(
            codes.iter().any(|code| code.starts_with(family)),
            "no {family}xx finding: {codes:?}"
        );
    }
}
