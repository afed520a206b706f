//! The content cache: a warm run prints what a cold run printed, and a change of the text, the
//! configuration or the command line is never answered from the cache.

mod common;

use common::*;

fn entries(project: &Project, dir: &str) -> usize {
    std::fs::read_dir(project.path(dir).join("v1"))
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_warm_run_answers_like_a_cold_run_from_the_project_cache() {
    let project = Project::new(&[
        ("pyproject.toml", "[tool.tpulint]\n"),
        ("train.py", CUDA_SCRIPT),
        ("clean.py", CLEAN_SCRIPT),
    ]);
    let cold = project.run(&["check", "--output-format", "json"]);
    assert_eq!(entries(&project, ".tpulint_cache"), 2);
    let ignore = std::fs::read_to_string(project.path(".tpulint_cache/.gitignore")).unwrap();
    assert!(ignore.contains('*'), "{ignore}");
    let warm = project.run(&["check", "--output-format", "json"]);
    assert_eq!(cold.code(), 1);
    assert_eq!(warm.code(), cold.code());
    assert_eq!(warm.json(), cold.json());
}

#[test]
fn changed_text_settings_or_flags_are_checked_again() {
    let project = Project::new(&[
        ("pyproject.toml", "[tool.tpulint]\n"),
        ("train.py", CUDA_SCRIPT),
    ]);
    let first = project.run(&["check", "--output-format", "concise"]);
    assert!(
        first.codes().contains(&"TPU101".to_string()),
        "{}",
        first.stdout()
    );

    // The command line: a selection that excludes TPU101.
    let selected = project.run(&["check", "--output-format", "concise", "--ignore", "TPU101"]);
    assert!(
        !selected.codes().contains(&"TPU101".to_string()),
        "{}",
        selected.stdout()
    );

    // The configuration file.
    project.write("pyproject.toml", b"[tool.tpulint]\nignore = [\"TPU4\"]\n");
    let configured = project.run(&["check", "--output-format", "concise"]);
    assert!(
        configured
            .codes()
            .iter()
            .all(|code| !code.starts_with("TPU4")),
        "{}",
        configured.stdout()
    );

    // The text.
    project.write("train.py", CLEAN_SCRIPT.as_bytes());
    let clean = project.run(&["check", "--output-format", "concise"]);
    assert_eq!(clean.code(), 0, "{}", clean.stdout());
}

#[test]
fn no_cache_writes_nothing_and_cache_dir_moves_it() {
    let project = Project::new(&[
        ("pyproject.toml", "[tool.tpulint]\n"),
        ("train.py", CUDA_SCRIPT),
    ]);
    project.run(&["check", "--no-cache"]);
    assert!(!project.path(".tpulint_cache").exists());
    project.run(&["check", "--cache-dir", "elsewhere"]);
    assert!(!project.path(".tpulint_cache").exists());
    assert_eq!(entries(&project, "elsewhere"), 1);
}

#[test]
fn the_cache_dir_setting_moves_it_and_the_flag_wins() {
    let project = Project::new(&[
        (
            "pyproject.toml",
            "[tool.tpulint]\ncache-dir = \"build/lint-cache\"\n",
        ),
        ("train.py", CUDA_SCRIPT),
    ]);
    project.run(&["check"]);
    assert!(!project.path(".tpulint_cache").exists());
    assert_eq!(entries(&project, "build/lint-cache"), 1);
    project.run(&["check", "--cache-dir", "flag"]);
    assert_eq!(entries(&project, "flag"), 1);

    project.write("pyproject.toml", b"[tool.tpulint]\ncache-dir = 3\n");
    let bad = project.run(&["check"]);
    assert_eq!(bad.code(), 2);
    assert!(bad.stderr().contains("cache-dir"), "{}", bad.stderr());
}

#[test]
fn fixing_never_reads_the_cache() {
    let project = Project::new(&[
        (
            "pyproject.toml",
            "[tool.tpulint]\nbackend = \"torch_xla\"\n",
        ),
        ("train.py", CUDA_SCRIPT),
    ]);
    project.run(&["check"]);
    let fixed = project.run(&["check", "--fix", "--unsafe-fixes"]);
    assert_ne!(
        String::from_utf8_lossy(&project.read("train.py")),
        CUDA_SCRIPT,
        "{}",
        fixed.stdout()
    );
}
