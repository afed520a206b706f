//! The flags ruff users reach for: `-o/--output-file`, `--fail-on`, `--fix-only`,
//! `--exit-non-zero-on-fix`, `--show-settings`, `--show-files`, `--color`, `fixable` /
//! `unfixable`, `--add-noqa`, `-w/--watch`, and the `version` and `rule --all` subcommands.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::time::{Duration, Instant};

use common::*;

#[test]
fn output_file_receives_the_report_and_stdout_stays_empty() {
    let project = cuda_project();
    let run = project.run(&[
        "check",
        "-o",
        "reports/tpulint.json",
        "--output-format",
        "json",
    ]);
    assert_eq!(run.code(), 1);
    assert!(run.0.stdout.is_empty(), "{}", run.stdout());
    let report: serde_json::Value =
        serde_json::from_slice(&project.read("reports/tpulint.json")).expect("JSON");
    assert!(!report.as_array().unwrap().is_empty());

    let run = project.run(&["check", "--output-file", "out.txt"]);
    assert!(run.0.stdout.is_empty());
    let text = String::from_utf8(project.read("out.txt")).unwrap();
    assert!(text.contains("Found "), "{text}");
    assert!(!text.contains('\x1b'), "no colour in a file: {text}");

    // An output file that cannot be written is an error, exit 2.
    project.write("blocker", b"");
    let run = project.run(&["check", "-o", "blocker/report.txt"]);
    assert_eq!(run.code(), 2);
    assert!(
        run.stderr()
            .starts_with("error: cannot write --output-file"),
        "{}",
        run.stderr()
    );
}

#[test]
fn fail_on_sets_the_severity_that_fails_the_run() {
    // TPU601 is info; TPU401/TPU403 are errors and TPU101 a warning.
    let info_only = Project::new(&[("step.py", XLA_SCRIPT)]);
    assert_eq!(info_only.run(&["check"]).code(), 1);
    assert_eq!(info_only.run(&["check", "--fail-on", "info"]).code(), 1);
    assert_eq!(info_only.run(&["check", "--fail-on", "warning"]).code(), 0);
    let run = info_only.run(&["check", "--fail-on", "error"]);
    assert_eq!(run.code(), 0);
    assert!(
        run.stdout().contains("Found 1 diagnostic"),
        "still reported"
    );

    let errors = Project::new(&[("train.py", CUDA_SCRIPT)]);
    assert_eq!(errors.run(&["check", "--fail-on", "error"]).code(), 1);
    assert_eq!(errors.run(&["check", "--fail-on", "fatal"]).code(), 2);
}

#[test]
fn fix_only_reports_fixes_and_ignores_what_remains() {
    let project = cuda_project();
    let run = project.run(&["check", "--fix-only"]);
    assert_eq!(run.code(), 0, "{}", run.stdout());
    assert_eq!(run.stdout(), "Fixed 1 diagnostic.\n");
    assert!(
        String::from_utf8(project.read("pkg/xla_step.py"))
            .unwrap()
            .contains("torch_xla.sync()")
    );
    let run = project.run(&["check", "--fix-only"]);
    assert_eq!(run.stdout(), "No fixes applied.\n");

    let project = cuda_project();
    let run = project.run(&["check", "--fix-only", "--exit-non-zero-on-fix"]);
    assert_eq!(run.code(), 1);
}

#[test]
fn exit_non_zero_on_fix_fails_a_run_that_changed_files() {
    let project = Project::new(&[("step.py", XLA_SCRIPT)]);
    let run = project.run(&["check", "--fix", "--exit-non-zero-on-fix"]);
    assert_eq!(run.code(), 1, "{}", run.stdout());
    assert!(
        run.stdout().contains("1 fixed, 0 remaining"),
        "{}",
        run.stdout()
    );
    // Nothing left to fix: exit 0.
    assert_eq!(
        project
            .run(&["check", "--fix", "--exit-non-zero-on-fix"])
            .code(),
        0
    );
    let project = Project::new(&[("step.py", XLA_SCRIPT)]);
    assert_eq!(project.run(&["check", "--fix"]).code(), 0);
}

#[test]
fn show_settings_names_the_configuration_backend_and_rules() {
    let project = Project::new(&[
        (
            "pyproject.toml",
            "[tool.tpulint]\nbackend = \"torch_xla\"\nignore = [\"TPU101\"]\nunfixable = [\"TPU601\"]\nexclude = [\"vendor\"]\n\n[tool.tpulint.per-file-ignores]\n\"tests/*\" = [\"TPU4\"]\n",
        ),
        ("src/train.py", CUDA_SCRIPT),
    ]);
    let run = project.run(&["check", "--show-settings"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let stdout = run.stdout();
    assert!(stdout.contains("Settings for: src/train.py"), "{stdout}");
    assert!(stdout.contains("pyproject.toml"), "{stdout}");
    assert!(stdout.contains("Backend: torch_xla"), "{stdout}");
    assert!(stdout.contains("    TPU401  "), "{stdout}");
    assert!(!stdout.contains("TPU101"), "{stdout}");
    assert!(stdout.contains("Unfixable: TPU601"), "{stdout}");
    assert!(stdout.contains("Exclude: vendor"), "{stdout}");
    assert!(stdout.contains("tests/* = TPU4"), "{stdout}");

    let run = project.run(&["check", "--show-settings", "--output-format", "json"]);
    let settings = run.json();
    assert_eq!(settings["backend"], "torch_xla");
    assert!(
        settings["config_file"]
            .as_str()
            .unwrap()
            .ends_with("pyproject.toml")
    );
    let enabled = settings["enabled_rules"].as_array().unwrap();
    assert!(enabled.iter().all(|code| code != "TPU101"));

    // Flags are layered over the file, and the defaults are named when there is no file.
    let bare = Project::new(&[("a.py", CLEAN_SCRIPT)]);
    let stdout = bare
        .run(&["check", "--show-settings", "--backend", "torchtpu"])
        .stdout();
    assert!(stdout.contains("Configuration file: none"), "{stdout}");
    assert!(stdout.contains("Backend: torchtpu"), "{stdout}");
}

#[test]
fn show_files_lists_what_a_check_reads() {
    let project = Project::new(&[
        ("tpulint.toml", "exclude = [\"vendor\"]\n"),
        ("src/a.py", CLEAN_SCRIPT),
        ("src/b.pyi", CLEAN_SCRIPT),
        ("vendor/c.py", CLEAN_SCRIPT),
        ("notes.txt", "x"),
    ]);
    let run = project.run(&["check", "--show-files"]);
    assert_eq!(run.code(), 0);
    assert_eq!(run.stdout(), "src/a.py\nsrc/b.pyi\n");
}

#[test]
fn color_is_on_for_always_off_for_pipes_and_never_and_no_color() {
    let project = Project::new(&[("train.py", CUDA_SCRIPT)]);
    let always = project.run(&["check", "--color", "always"]).stdout();
    assert!(always.contains("\x1b[1;31mTPU401\x1b[0m"), "{always:?}");
    let concise = project.run(&["check", "--color", "always", "--output-format", "concise"]);
    assert!(
        concise.stdout().contains("\x1b[1mtrain.py\x1b[0m"),
        "{:?}",
        concise.stdout()
    );
    // A pipe (the tests' stdout) gets none by default.
    assert!(!project.run(&["check"]).stdout().contains('\x1b'));
    assert!(
        !project
            .run(&["check", "--color", "never"])
            .stdout()
            .contains('\x1b')
    );
    // Without colour the text is exactly the plain text.
    let plain = project.run(&["check", "--color", "never"]).stdout();
    let stripped = strip_ansi(&always);
    assert_eq!(stripped, plain);
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn version_subcommand() {
    let project = Project::new(&[]);
    let run = project.run(&["version"]);
    assert_eq!(run.code(), 0);
    assert_eq!(
        run.stdout(),
        format!("tpulint {}\n", env!("CARGO_PKG_VERSION"))
    );
    let json = project.run(&["version", "--output-format", "json"]).json();
    assert_eq!(json["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(project.run(&["--version"]).code(), 0);
}

#[test]
fn rule_all_shows_which_rules_are_on_by_default() {
    let project = Project::new(&[]);
    let run = project.run(&["rule", "--all"]);
    let stdout = run.stdout();
    let header = stdout.lines().next().unwrap();
    assert!(header.contains("DEFAULT"), "{header}");
    let rules = project
        .run(&["rule", "--all", "--output-format", "json"])
        .json();
    for rule in rules.as_array().unwrap() {
        let code = rule["code"].as_str().unwrap();
        let line = stdout
            .lines()
            .find(|line| line.starts_with(code))
            .unwrap_or_else(|| panic!("{code} missing"));
        let expected = if rule["family"] == "runtime" {
            // The runtime codes of `tpulint trace` are never `check` rules.
            " trace "
        } else if rule["enabled_by_default"].as_bool().unwrap() {
            " on "
        } else {
            " off "
        };
        assert!(line.contains(expected), "{line}");
    }
}

#[test]
fn unfixable_and_fixable_keep_fixes_from_being_applied() {
    for (config, args) in [
        ("", &["check", "--fix", "--unfixable", "TPU601"][..]),
        ("", &["check", "--fix", "--fixable", "TPU1"]),
        ("unfixable = [\"TPU6\"]\n", &["check", "--fix"]),
        ("fixable = [\"TPU4\"]\n", &["check", "--fix"]),
    ] {
        let project = Project::new(&[("tpulint.toml", config), ("step.py", XLA_SCRIPT)]);
        let run = project.run(args);
        assert_eq!(
            project.read("step.py"),
            XLA_SCRIPT.as_bytes(),
            "{config} {args:?}"
        );
        assert_eq!(run.code(), 1, "{config} {args:?}");
        assert!(!run.stdout().contains("fixable"), "{}", run.stdout());
        assert!(!run.stdout().contains("[*]"), "{}", run.stdout());
    }
    // The command line replaces the file's `fixable`.
    let project = Project::new(&[
        ("tpulint.toml", "fixable = [\"TPU4\"]\n"),
        ("step.py", XLA_SCRIPT),
    ]);
    assert_eq!(
        project.run(&["check", "--fix", "--fixable", "ALL"]).code(),
        0
    );
    // Unknown codes are configuration errors.
    let project = Project::new(&[
        ("tpulint.toml", "unfixable = [\"NOPE\"]\n"),
        ("step.py", XLA_SCRIPT),
    ]);
    let run = project.run(&["check"]);
    assert_eq!(run.code(), 2);
    assert!(run.stderr().contains("unfixable"), "{}", run.stderr());
}

#[test]
fn add_noqa_makes_legacy_code_pass_and_is_idempotent() {
    let legacy = CUDA_SCRIPT.replace("print(loss.item())", "print(loss.item())  # noqa: TPU102");
    let project = Project::new(&[("train.py", &legacy), ("broken.py", "def f(:\n")]);
    let run = project.run(&["check", "--add-noqa"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(
        run.stderr().contains("Added 3 noqa directives."),
        "{}",
        run.stderr()
    );
    let after = String::from_utf8(project.read("train.py")).unwrap();
    assert!(
        after.contains("device = torch.device(\"cuda\")  # noqa: TPU401\n"),
        "{after}"
    );
    assert!(after.contains("images.cuda()  # noqa: TPU403\n"), "{after}");
    // Merged into the line's list (whose unused TPU102 is TPU901's business, not suppressed).
    assert!(after.contains("# noqa: TPU102, TPU101\n"), "{after}");
    let check = project.run(&["check", "train.py", "--ignore", "TPU901"]);
    assert_eq!(check.code(), 0, "{after}\n{}", check.stdout());
    // Syntax errors are never suppressed.
    assert_eq!(project.read("broken.py"), b"def f(:\n");
    let again = project.run(&["check", "--add-noqa"]);
    assert!(
        again.stderr().contains("Added 0 noqa directives."),
        "{}",
        again.stderr()
    );
    assert_eq!(String::from_utf8(project.read("train.py")).unwrap(), after);

    // A comment cannot follow a line that ends inside a string: said, and the file left alone.
    let source = "import torch\n\ndevice = torch.device(\"cuda\"), \"\"\"\nnote\n\"\"\"\n";
    let project = Project::new(&[("multi.py", source)]);
    let run = project.run(&["check", "--add-noqa"]);
    assert!(
        run.stderr()
            .contains("warning: multi.py:3: no noqa directive added"),
        "{}",
        run.stderr()
    );
    assert_eq!(project.read("multi.py"), source.as_bytes());
}

/// Reads lines from a child's pipe on a thread, so the test can wait with a deadline.
fn lines_of(pipe: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

fn wait_for(lines: &std::sync::mpsc::Receiver<String>, wanted: &str, seen: &mut Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(line) = lines.recv_timeout(Duration::from_millis(100)) {
            let found = line.contains(wanted);
            seen.push(line);
            if found {
                return;
            }
        }
    }
    panic!("`{wanted}` never came; saw {seen:#?}");
}

#[test]
fn watch_checks_again_when_a_file_changes() {
    let project = Project::new(&[("step.py", CLEAN_SCRIPT)]);
    let mut child = project.spawn(&["check", "--watch", "--output-format", "concise"]);
    let stdout = lines_of(child.stdout.take().unwrap());
    let stderr = lines_of(child.stderr.take().unwrap());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    wait_for(&stdout, "All checks passed!", &mut out);
    wait_for(&stderr, "Watching for file changes", &mut err);
    // A save that also changes the size, so the change is seen whatever the clock's resolution.
    project.write("step.py", XLA_SCRIPT.as_bytes());
    wait_for(&stderr, "File change detected", &mut err);
    wait_for(&stdout, "step.py:6:5: TPU601", &mut out);
    // A configuration file that appears is read too.
    project.write("tpulint.toml", b"ignore = [\"TPU601\"]\n");
    wait_for(&stdout, "All checks passed!", &mut out);
    let _ = child.kill();
    let _ = child.wait();
}
