//! No silent passes, no lost bytes: syntax errors are diagnostics; unreadable paths are
//! `io-error` diagnostics that fail the run while the rest is checked; `--fix` never corrupts
//! non-UTF-8 input, never rewrites read-only files, and keeps hard links and permissions;
//! `--stdin-filename` reads stdin as ruff does.

mod common;

use common::*;

/// The example: an unclosed call swallows the `.item()` below it.
const BROKEN: &str =
    "import torch\n\n\ndef f(model, x):\n    loss = model(x).sum(\n    print(loss.item())\n";

#[test]
fn a_file_that_does_not_parse_fails_with_a_located_syntax_error() {
    let project = Project::new(&[("broken.py", BROKEN), ("clean.py", CLEAN_SCRIPT)]);
    let run = project.run(&["check", "--output-format", "concise"]);
    assert_eq!(run.code(), 1, "{}", run.stdout());
    let stdout = run.stdout();
    assert!(
        stdout.contains("broken.py:5:24: invalid-syntax: `(` is never closed"),
        "{stdout}"
    );
    assert!(!stdout.contains("All checks passed"), "{stdout}");
    assert!(stdout.contains("1 error"), "{stdout}");

    // No selection and no `# noqa` hides it; `--exit-zero` still works.
    for args in [
        &["check", "--select", "TPU601"][..],
        &["check", "--ignore", "ALL"],
        &["check", "--fail-on", "error"],
    ] {
        let run = project.run(args);
        assert_eq!(run.code(), 1, "{args:?}: {}", run.stdout());
        assert!(run.stdout().contains("invalid-syntax"), "{args:?}");
    }
    project.write(
        "broken.py",
        BROKEN.replace("sum(\n", "sum(  # noqa\n").as_bytes(),
    );
    assert_eq!(project.run(&["check"]).code(), 1);
    assert_eq!(project.run(&["check", "--exit-zero"]).code(), 0);

    // ruff's JSON: no code, name `invalid-syntax`, no noqa row.
    let run = project.run(&["check", "broken.py", "--output-format", "json"]);
    let items = run.json();
    let error = &items.as_array().expect("list")[0];
    assert_eq!(error["code"], serde_json::Value::Null);
    assert_eq!(error["name"], "invalid-syntax");
    assert_eq!(error["severity"], "error");
    assert_eq!(error["noqa_row"], serde_json::Value::Null);
    assert_eq!(error["location"]["row"], 5);
}

#[test]
fn rules_still_run_on_the_parts_that_parse() {
    let source = format!("{CUDA_SCRIPT}\n\ndef g(:\n    pass\n");
    let project = Project::new(&[("train.py", &source)]);
    let run = project.run(&["check", "--output-format", "concise"]);
    assert_eq!(run.code(), 1);
    assert!(
        run.codes().contains(&"TPU101".to_string()),
        "{}",
        run.stdout()
    );
    assert!(run.stdout().contains("invalid-syntax"), "{}", run.stdout());
}

#[test]
fn non_utf8_stdin_is_never_fixed_and_nothing_reaches_stdout() {
    let project = Project::new(&[]);
    // Latin-1 `é`: not UTF-8.
    let mut bytes = b"# caf\xe9\n".to_vec();
    bytes.extend_from_slice(XLA_SCRIPT.as_bytes());
    for args in [
        &["check", "-", "--fix"][..],
        &["check", "--stdin-filename", "step.py", "--fix"],
        &["check", "-", "--fix-only"],
    ] {
        let run = project.run_in(".", args, Some(&bytes));
        assert_eq!(run.code(), 2, "{args:?}: {}", run.stderr());
        assert!(run.0.stdout.is_empty(), "{args:?}: {:?}", run.stdout());
        assert!(run.stderr().contains("not valid UTF-8"), "{}", run.stderr());
    }
    // Checking it without fixing is fine.
    let run = project.run_in(
        ".",
        &["check", "-", "--output-format", "concise"],
        Some(&bytes),
    );
    assert_eq!(run.code(), 1);
    assert_eq!(run.codes(), ["TPU601"]);
}

#[test]
fn fixes_of_a_non_utf8_file_are_not_counted_as_fixable_or_fixed() {
    let project = Project::new(&[]);
    let mut bytes = b"# caf\xe9\n".to_vec();
    bytes.extend_from_slice(XLA_SCRIPT.as_bytes());
    project.write("step.py", &bytes);
    let run = project.run(&["check", "--fix"]);
    assert_eq!(project.read("step.py"), bytes);
    let stdout = run.stdout();
    assert!(!stdout.contains("fixed"), "{stdout}");
    assert!(!stdout.contains("fixable"), "{stdout}");
    assert!(!stdout.contains("[*]"), "{stdout}");
    assert_eq!(run.code(), 1);
}

#[cfg(unix)]
#[test]
fn fix_leaves_a_read_only_file_alone_and_reports_an_io_error() {
    use std::os::unix::fs::PermissionsExt;
    let project = Project::new(&[("step.py", XLA_SCRIPT), ("other.py", XLA_SCRIPT)]);
    let path = project.path("step.py");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let run = project.run(&["check", "--fix", "--output-format", "concise"]);
    assert_eq!(run.code(), 2, "{}", run.stdout());
    assert_eq!(project.read("step.py"), XLA_SCRIPT.as_bytes());
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o444);
    let stdout = run.stdout();
    assert!(
        stdout.contains("step.py:1:1: io-error: Cannot write fixes: the file is read-only"),
        "{stdout}"
    );
    // The other file was still fixed.
    assert_ne!(project.read("other.py"), XLA_SCRIPT.as_bytes());
}

#[cfg(unix)]
#[test]
fn fix_keeps_hard_links_permissions_and_the_inode() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let project = Project::new(&[("step.py", XLA_SCRIPT)]);
    let path = project.path("step.py");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    std::fs::hard_link(&path, project.path("alias.py")).unwrap();
    let inode = std::fs::metadata(&path).unwrap().ino();
    let run = project.run(&["check", "step.py", "--fix"]);
    assert_eq!(run.code(), 0, "{}", run.stdout());
    let fixed = project.read("step.py");
    assert_ne!(fixed, XLA_SCRIPT.as_bytes());
    assert_eq!(project.read("alias.py"), fixed);
    let metadata = std::fs::metadata(&path).unwrap();
    assert_eq!(metadata.ino(), inode);
    assert_eq!(metadata.nlink(), 2);
    assert_eq!(metadata.permissions().mode() & 0o777, 0o750);

    // A file with one name keeps its permissions too.
    let single = Project::new(&[("step.py", XLA_SCRIPT)]);
    let path = single.path("step.py");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o604)).unwrap();
    assert_eq!(single.run(&["check", "--fix"]).code(), 0);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o604);
}

#[cfg(unix)]
#[test]
fn fix_keeps_the_owner_of_a_file_it_rewrites() {
    use std::os::unix::fs::MetadataExt;
    let project = Project::new(&[("step.py", XLA_SCRIPT)]);
    let path = project.path("step.py");
    // Only root can give a file away; elsewhere the owner is the user and stays so trivially.
    if std::os::unix::fs::chown(&path, Some(4242), Some(4243)).is_err() {
        return;
    }
    assert_eq!(project.run(&["check", "--fix"]).code(), 0);
    assert_ne!(project.read("step.py"), XLA_SCRIPT.as_bytes());
    let metadata = std::fs::metadata(&path).unwrap();
    assert_eq!((metadata.uid(), metadata.gid()), (4242, 4243));
}

#[cfg(unix)]
#[test]
fn unreadable_paths_are_diagnostics_and_the_rest_is_still_checked() {
    let project = Project::new(&[("pkg/step.py", XLA_SCRIPT)]);
    std::os::unix::fs::symlink("gone.py", project.path("pkg/dangling.py")).unwrap();
    let run = project.run(&["check", "pkg", "missing.py", "--output-format", "concise"]);
    assert_eq!(run.code(), 2, "{}", run.stdout());
    let stdout = run.stdout();
    assert!(
        stdout.contains("pkg/dangling.py:1:1: io-error: Cannot read: No such file or directory"),
        "{stdout}"
    );
    assert!(
        stdout.contains("missing.py:1:1: io-error: No such file or directory"),
        "{stdout}"
    );
    assert_eq!(run.codes(), ["TPU601"], "{stdout}");
    assert!(
        stdout.contains("Found 3 diagnostics (2 errors, 1 info)"),
        "{stdout}"
    );

    // Machine-readable formats carry them too; `--exit-zero` does not hide an I/O error.
    let run = project.run(&["check", "pkg", "--output-format", "json", "--exit-zero"]);
    assert_eq!(run.code(), 2);
    let items = run.json();
    let names: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"io-error"), "{names:?}");
}

#[test]
fn stdin_filename_alone_reads_stdin() {
    // A file in the working directory that must not be checked.
    let project = Project::new(&[("train.py", CUDA_SCRIPT)]);
    let run = project.run_in(
        ".",
        &[
            "check",
            "--stdin-filename",
            "pkg/step.py",
            "--output-format",
            "concise",
        ],
        Some(XLA_SCRIPT.as_bytes()),
    );
    assert_eq!(run.code(), 1, "{}", run.stderr());
    assert_eq!(run.path_codes(), ["pkg/step.py TPU601"]);

    // With --fix the fixed source is on stdout.
    let run = project.run_in(
        ".",
        &["check", "--stdin-filename", "step.py", "--fix"],
        Some(XLA_SCRIPT.as_bytes()),
    );
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(
        run.stdout().contains("torch_xla.sync()"),
        "{}",
        run.stdout()
    );

    // A path given too is ignored with a warning, as in ruff.
    let run = project.run_in(
        ".",
        &[
            "check",
            "train.py",
            "--stdin-filename",
            "step.py",
            "--output-format",
            "concise",
        ],
        Some(XLA_SCRIPT.as_bytes()),
    );
    assert_eq!(run.path_codes(), ["step.py TPU601"]);
    assert!(
        run.stderr().contains("warning: ignoring `train.py`"),
        "{}",
        run.stderr()
    );
}

#[test]
fn the_summary_says_how_to_enable_backendless_device_fixes() {
    let project = Project::new(&[("train.py", CUDA_SCRIPT)]);
    let run = project.run(&["check", "--fix", "--unsafe-fixes"]);
    let stdout = run.stdout();
    assert!(
        stdout.contains("2 device fixes are only a suggestion"),
        "{stdout}"
    );
    assert!(stdout.contains("`--backend torch_xla`"), "{stdout}");
    assert!(stdout.contains("backend = \"torch_xla\""), "{stdout}");

    // Following the advice applies them.
    let run = project.run(&["check", "--fix", "--unsafe-fixes", "--backend", "torch_xla"]);
    assert!(
        !run.stdout().contains("only a suggestion"),
        "{}",
        run.stdout()
    );
    let fixed = String::from_utf8(project.read("train.py")).unwrap();
    assert!(!fixed.contains("\"cuda\""), "{fixed}");
}
