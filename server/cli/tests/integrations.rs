//! End-to-end tests of what pre-commit hooks and CI services rely on: `--force-exclude` (files
//! named explicitly respect `exclude`) and the `gitlab`, `junit` and `json-lines` formats as the
//! binary prints them. The formats' schemas are tested in `tpulint_report`'s `ci_formats`.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A CUDA script with several findings.
const CUDA_SCRIPT: &str = "import torch\n\ndevice = torch.device(\"cuda\")\n\n\ndef train(model, loader):\n    for images in loader:\n        loss = model(images.cuda()).sum()\n        print(loss.item())\n";

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let directory = tempfile::tempdir().expect("temporary directory");
    for (relative, content) in files {
        let path = directory.path().join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }
    directory
}

fn tpulint(directory: &Path, args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tpulint"));
    command
        .args(args)
        .current_dir(directory)
        .env_remove("CI_PROJECT_DIR")
        .stdin(Stdio::null());
    for (key, value) in envs {
        command.env(key, value);
    }
    command.output().expect("run tpulint")
}

/// The distinct files named in concise output.
fn reported_files(output: &Output) -> Vec<String> {
    let mut files: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.contains(": TPU"))
        .filter_map(|line| line.split(':').next().map(str::to_string))
        .collect();
    files.dedup();
    files
}

fn vendored_project() -> tempfile::TempDir {
    project(&[
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

    let output = tpulint(project.path(), &[&concise[..], &named[..]].concat(), &[]);
    assert_eq!(output.status.code(), Some(1));
    let mut sorted = named.to_vec();
    sorted.sort_unstable();
    assert_eq!(reported_files(&output), sorted);

    // `exclude` patterns, the default excludes (`build`) and excluded parent directories.
    let forced = [&concise[..], &["--force-exclude"], &named[..]].concat();
    let output = tpulint(project.path(), &forced, &[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(reported_files(&output), ["src/train.py"]);

    // A later --no-force-exclude wins, as in ruff.
    let output = tpulint(
        project.path(),
        &[&forced[..], &["--no-force-exclude"]].concat(),
        &[],
    );
    assert_eq!(reported_files(&output).len(), named.len());
}

#[test]
fn force_exclude_passes_when_every_named_file_is_excluded() {
    // What pre-commit does when only vendored files are staged: nothing to check, success.
    let project = vendored_project();
    let output = tpulint(
        project.path(),
        &[
            "check",
            "--force-exclude",
            "vendor/lib.py",
            "generated_model.py",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    // An excluded directory named explicitly is skipped too.
    let output = tpulint(project.path(), &["check", "--force-exclude", "vendor"], &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

#[test]
fn force_exclude_uses_the_configuration_governing_each_file() {
    // A nested project's `exclude` is relative to its own root, whatever the working directory.
    let project = project(&[
        ("pyproject.toml", "[tool.tpulint]\n"),
        (
            "pkg/pyproject.toml",
            "[tool.tpulint]\nexclude = [\"third_party\"]\n",
        ),
        ("pkg/third_party/x.py", CUDA_SCRIPT),
        ("third_party/y.py", CUDA_SCRIPT),
    ]);
    let output = tpulint(
        project.path(),
        &[
            "check",
            "--output-format",
            "concise",
            "--force-exclude",
            "pkg/third_party/x.py",
            "third_party/y.py",
        ],
        &[],
    );
    assert_eq!(reported_files(&output), ["third_party/y.py"]);
    let output = tpulint(
        &project.path().join("pkg"),
        &["check", "--force-exclude", "third_party/x.py"],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

#[test]
fn gitlab_paths_are_relative_to_ci_project_dir() {
    let project = project(&[("app/src/train.py", CUDA_SCRIPT)]);
    let run_directory = project.path().join("app");
    let output = tpulint(
        &run_directory,
        &["check", "--output-format", "gitlab", "src"],
        &[("CI_PROJECT_DIR", project.path())],
    );
    assert_eq!(output.status.code(), Some(1));
    let issues: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let issues = issues.as_array().expect("a list");
    assert!(!issues.is_empty());
    for issue in issues {
        assert_eq!(issue["location"]["path"], "app/src/train.py", "{issue}");
    }
    // Without the variable: as displayed, relative to the working directory.
    let output = tpulint(
        &run_directory,
        &["check", "--output-format", "gitlab", "src"],
        &[],
    );
    let issues: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(issues[0]["location"]["path"], "src/train.py");
}

#[test]
fn junit_and_json_lines_from_the_binary() {
    let project = project(&[("train.py", CUDA_SCRIPT), ("clean.py", "x = 1\n")]);
    let json = tpulint(project.path(), &["check", "--output-format", "json"], &[]);
    let array: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let count = array.as_array().expect("a list").len();
    assert!(count >= 2);

    let lines = tpulint(
        project.path(),
        &["check", "--output-format", "json-lines"],
        &[],
    );
    assert_eq!(lines.status.code(), Some(1));
    let lines = String::from_utf8(lines.stdout).expect("UTF-8");
    assert_eq!(lines.lines().count(), count);
    for line in lines.lines() {
        let object: Value = serde_json::from_str(line).expect("a JSON object per line");
        assert!(
            object["code"]
                .as_str()
                .is_some_and(|code| code.starts_with("TPU"))
        );
    }

    let junit = tpulint(project.path(), &["check", "--output-format", "junit"], &[]);
    assert_eq!(junit.status.code(), Some(1));
    let xml = String::from_utf8(junit.stdout).expect("UTF-8");
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"tpulint\"")
    );
    assert_eq!(xml.matches("<testcase ").count(), count);
    assert_eq!(xml.matches("<failure ").count(), count);
    assert!(xml.contains("<testsuite name=\"train.py\""));

    // A clean run: no lines, and one passing test case.
    let clean = tpulint(
        project.path(),
        &["check", "--output-format", "junit", "clean.py"],
        &[],
    );
    assert_eq!(clean.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&clean.stdout).contains("name=\"No errors found\""));
    let clean = tpulint(
        project.path(),
        &["check", "--output-format", "json-lines", "clean.py"],
        &[],
    );
    assert_eq!((clean.status.code(), clean.stdout.len()), (Some(0), 0));
}
