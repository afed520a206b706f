//! End-to-end tests of what pre-commit hooks and CI services rely on: `--force-exclude` (files
//! named explicitly respect `exclude`) and the `gitlab`, `junit` and `json-lines` formats as the
//! binary prints them. The formats' schemas are tested in `tpulint_report`'s `ci_formats`.

mod common;

use std::process::Command;

use common::{CLEAN_SCRIPT, CUDA_SCRIPT, Project, Run, XLA_SCRIPT};
use serde_json::Value;

/// The distinct files named in concise output, in order.
fn reported_files(run: &Run) -> Vec<String> {
    let mut files: Vec<String> = run
        .path_codes()
        .iter()
        .filter_map(|path_code| path_code.split(' ').next().map(str::to_string))
        .collect();
    files.dedup();
    files
}

fn vendored_project() -> Project {
    Project::new(&[
        (
            "pyproject.toml",
            "[tool.tpulint]\nexclude = [\"vendor\", \"generated_*.py\"]\n",
        ),
        ("vendor/lib.py", CUDA_SCRIPT),
        ("generated_model.py", CUDA_SCRIPT),
        ("build/out.py", CUDA_SCRIPT),
        ("src/train.py", CUDA_SCRIPT),
    ])
}

#[test]
fn files_named_explicitly_bypass_exclude_unless_force_exclude() {
    let project = vendored_project();
    let named = [
        "vendor/lib.py",
        "generated_model.py",
        "build/out.py",
        "src/train.py",
    ];
    let concise = ["check", "--output-format", "concise"];

    let run = project.run(&[&concise[..], &named[..]].concat());
    assert_eq!(run.code(), 1);
    let mut sorted = named.to_vec();
    sorted.sort_unstable();
    assert_eq!(reported_files(&run), sorted);

    // `exclude` patterns, the default excludes (`build`) and excluded parent directories.
    let forced = [&concise[..], &["--force-exclude"], &named[..]].concat();
    let run = project.run(&forced);
    assert_eq!(run.code(), 1);
    assert_eq!(reported_files(&run), ["src/train.py"]);

    // A later --no-force-exclude wins, as in ruff.
    let run = project.run(&[&forced[..], &["--no-force-exclude"]].concat());
    assert_eq!(reported_files(&run).len(), named.len());
}

#[test]
fn force_exclude_passes_when_every_named_file_is_excluded() {
    // What pre-commit does when only vendored files are staged: nothing to check, success.
    let project = vendored_project();
    let run = project.run(&[
        "check",
        "--force-exclude",
        "vendor/lib.py",
        "generated_model.py",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    // An excluded directory named explicitly is skipped too.
    let run = project.run(&["check", "--force-exclude", "vendor"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
}

#[test]
fn force_exclude_applies_to_the_stdin_filename() {
    // Editor integrations pipe the buffer with its name: an excluded file reports nothing, and
    // with --fix the input comes back unchanged.
    let project = vendored_project();
    let input = XLA_SCRIPT.as_bytes();
    let base = ["check", "-", "--stdin-filename", "vendor/lib.py"];
    assert_eq!(project.run_in(".", &base, Some(input)).code(), 1);
    let excluded = project.run_in(
        ".",
        &[&base[..], &["--force-exclude"]].concat(),
        Some(input),
    );
    assert_eq!((excluded.code(), excluded.stdout()), (0, String::new()));
    let fixed = project.run_in(
        ".",
        &[&base[..], &["--force-exclude", "--fix"]].concat(),
        Some(input),
    );
    assert_eq!(fixed.code(), 0);
    assert_eq!(fixed.0.stdout, input);
}

#[test]
fn force_exclude_uses_the_configuration_governing_each_file() {
    // A nested project's `exclude` is relative to its own root, whatever the working directory.
    let project = Project::new(&[
        ("pyproject.toml", "[tool.tpulint]\n"),
        (
            "pkg/pyproject.toml",
            "[tool.tpulint]\nexclude = [\"third_party\"]\n",
        ),
        ("pkg/third_party/x.py", CUDA_SCRIPT),
        ("third_party/y.py", CUDA_SCRIPT),
    ]);
    let run = project.run(&[
        "check",
        "--output-format",
        "concise",
        "--force-exclude",
        "pkg/third_party/x.py",
        "third_party/y.py",
    ]);
    assert_eq!(reported_files(&run), ["third_party/y.py"]);
    let run = project.run_in(
        "pkg",
        &["check", "--force-exclude", "third_party/x.py"],
        None,
    );
    assert_eq!(run.code(), 0, "{}", run.stderr());
}

#[test]
fn gitlab_paths_are_relative_to_ci_project_dir() {
    let project = Project::new(&[("app/src/train.py", CUDA_SCRIPT)]);
    let gitlab = |ci_project_dir: Option<&std::path::Path>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tpulint"));
        command
            .args(["check", "--output-format", "gitlab", "src"])
            .current_dir(project.path("app"))
            .env_remove("CI_PROJECT_DIR");
        if let Some(directory) = ci_project_dir {
            command.env("CI_PROJECT_DIR", directory);
        }
        Run(command.output().expect("run tpulint"))
    };
    let run = gitlab(Some(project.root()));
    assert_eq!(run.code(), 1);
    let issues = run.json();
    let issues = issues.as_array().expect("a list");
    assert!(!issues.is_empty());
    for issue in issues {
        assert_eq!(issue["location"]["path"], "app/src/train.py", "{issue}");
    }
    // Without the variable: as displayed, relative to the working directory.
    assert_eq!(gitlab(None).json()[0]["location"]["path"], "src/train.py");
}

#[test]
fn junit_and_json_lines_from_the_binary() {
    let project = Project::new(&[("train.py", CUDA_SCRIPT), ("clean.py", CLEAN_SCRIPT)]);
    let json = project.run(&["check", "--output-format", "json"]).json();
    let count = json.as_array().expect("a list").len();
    assert!(count >= 2);

    let lines = project.run(&["check", "--output-format", "json-lines"]);
    assert_eq!(lines.code(), 1);
    let lines = lines.stdout();
    assert_eq!(lines.lines().count(), count);
    for line in lines.lines() {
        let object: Value = serde_json::from_str(line).expect("a JSON object per line");
        assert!(
            object["code"]
                .as_str()
                .is_some_and(|code| code.starts_with("TPU"))
        );
    }

    let junit = project.run(&["check", "--output-format", "junit"]);
    assert_eq!(junit.code(), 1);
    let xml = junit.stdout();
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"tpulint\"")
    );
    assert_eq!(xml.matches("<testcase ").count(), count);
    assert_eq!(xml.matches("<failure ").count(), count);
    assert!(xml.contains("<testsuite name=\"train.py\""));

    // A clean run: one passing test case, and no lines.
    let clean = project.run(&["check", "--output-format", "junit", "clean.py"]);
    assert_eq!(clean.code(), 0);
    assert!(clean.stdout().contains("name=\"No errors found\""));
    let clean = project.run(&["check", "--output-format", "json-lines", "clean.py"]);
    assert_eq!((clean.code(), clean.stdout()), (0, String::new()));
}
