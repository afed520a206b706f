//! End-to-end tests of `tpulint trace run / import / report` on the built binary: a fake
//! interpreter replays real torch_xla 2.9 logs (`server/trace/tests/real/`) the way the real one
//! writes them, so no torch is needed; the real start-up hook runs under a plain `python3`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn real(scenario: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../trace/tests/real")
        .join(scenario)
}

/// A temporary project holding a recorded scenario's `train.py`.
fn project(scenario: &str) -> tempfile::TempDir {
    let directory = tempfile::tempdir().unwrap();
    std::fs::create_dir(directory.path().join(".git")).unwrap();
    std::fs::copy(
        real(scenario).join("train.py"),
        directory.path().join("train.py"),
    )
    .unwrap();
    directory
}

/// A shell script standing in for `python`: it checks the environment `trace run` sets, writes
/// the scenario's recorded logs where torch_xla, Dynamo and the hook would, prints to stdout
/// and exits with status 3.
fn fake_interpreter(directory: &Path, scenario: &str) -> PathBuf {
    let logs = real(scenario).join("logs");
    let script = format!(
        r#"#!/bin/sh
hook_dir="${{PYTHONPATH%%:*}}"
test -f "$hook_dir/sitecustomize.py" || {{ echo "no hook on PYTHONPATH" >&2; exit 90; }}
test "$PT_XLA_DEBUG_LEVEL" = 2 || exit 91
test -n "$TPULINT_TRACE_OUT" || exit 92
case "$TORCH_LOGS" in *recompiles*graph_breaks*) ;; *) exit 93 ;; esac
cat "{logs}/pt_xla_debug.txt" >> "$PT_XLA_DEBUG_FILE"
cat "{logs}/torch_logs.txt" >> "$TORCH_LOGS_OUT"
cp "{logs}/hook.json" "$TPULINT_TRACE_OUT/hook-4242.json"
echo "program output on stdout"
exit 3
"#,
        logs = logs.display()
    );
    let path = directory.join("fake-python");
    std::fs::write(&path, script).unwrap();
    path
}

fn tpulint(directory: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tpulint"))
        .args(args)
        .current_dir(directory)
        .env_remove("PYTHONPATH")
        .env_remove("TORCH_LOGS")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn run_passes_the_exit_status_through_and_keeps_stdout_for_findings() {
    let project = project("cpu_fallback");
    let fake = fake_interpreter(project.path(), "cpu_fallback");
    let fake = fake.to_str().unwrap();
    let output = tpulint(
        project.path(),
        &[
            "trace",
            "run",
            "--output-format",
            "json",
            "--",
            "sh",
            fake,
            "train.py",
        ],
    );
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    // The program's stdout went to stderr: stdout is only the JSON.
    assert!(text(&output.stderr).contains("program output on stdout"));
    let findings: Value = serde_json::from_slice(&output.stdout).expect("stdout is JSON");
    let findings = findings.as_array().unwrap();
    let fallback = findings
        .iter()
        .find(|f| f["code"] == "TPR201")
        .expect("a CPU fallback finding");
    assert_eq!(fallback["location"]["row"], 13);
    assert_eq!(fallback["name"], "runtime-cpu-fallback");
    assert!(
        fallback["message"]
            .as_str()
            .unwrap()
            .contains("`aten::nonzero` ran on the CPU 6 times here (confirms TPU301)")
    );
    assert!(
        fallback["url"]
            .as_str()
            .unwrap()
            .ends_with("docs/trace.md#tpr201")
    );
    assert!(fallback["filename"].as_str().unwrap().ends_with("train.py"));

    let trace: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join(".tpulint/trace.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(trace["version"], 1);
    assert_eq!(trace["exit_code"], 3);
    assert_eq!(trace["command"][0], "sh");
    assert_eq!(trace["totals"]["fallback_ops"]["aten::nonzero"], 6);
}

#[test]
fn run_in_text_format_shows_program_output_then_findings() {
    let project = project("item_per_step");
    let fake = fake_interpreter(project.path(), "item_per_step");
    let output = tpulint(
        project.path(),
        &[
            "trace",
            "run",
            "--out",
            "out/t.json",
            "--",
            "sh",
            fake.to_str().unwrap(),
            "train.py",
        ],
    );
    assert_eq!(output.status.code(), Some(3));
    let stdout = text(&output.stdout);
    let program = stdout.find("program output on stdout").unwrap();
    let finding = stdout
        .find("TPR101 6 executions here were caused by reading a tensor's value (confirms TPU101)")
        .unwrap();
    assert!(program < finding, "{stdout}");
    assert!(stdout.contains("train.py:17:5"));
    assert!(project.path().join("out/t.json").is_file());
}

#[test]
fn import_real_logs_in_every_output_format() {
    let project = project("never_syncs");
    let logs = real("never_syncs").join("logs");
    let logs: Vec<String> = ["pt_xla_debug.txt", "hook.json"]
        .iter()
        .map(|name| logs.join(name).to_string_lossy().into_owned())
        .collect();
    let mut args = vec!["trace", "import", "--output-format", "concise"];
    args.extend(logs.iter().map(String::as_str));
    let concise = tpulint(project.path(), &args);
    assert_eq!(concise.status.code(), Some(1), "{}", text(&concise.stderr));
    let stdout = text(&concise.stdout);
    assert!(
        stdout.contains(
            "train.py:10:1: TPR605 this run created XLA tensors but never called torch_xla.sync()"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("(confirms TPU605)"));

    args[3] = "sarif";
    let sarif: Value = serde_json::from_slice(&tpulint(project.path(), &args).stdout).unwrap();
    let rules = sarif["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    let result = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "TPR605")
        .unwrap()
        .clone();
    let index = result["ruleIndex"].as_u64().unwrap() as usize;
    assert_eq!(rules[index]["id"], "TPR605");

    args[3] = "github";
    let github = text(&tpulint(project.path(), &args).stdout);
    assert!(
        github.contains("::warning title=tpulint (TPR605),file=train.py,line=10"),
        "{github}"
    );

    args[3] = "json-lines";
    let lines = text(&tpulint(project.path(), &args).stdout);
    let first: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(first["code"], "TPR605");
    args[3] = "gitlab";
    let gitlab: Value = serde_json::from_slice(&tpulint(project.path(), &args).stdout).unwrap();
    assert!(gitlab.to_string().contains("TPR605"), "{gitlab}");
    args[3] = "junit";
    let junit = text(&tpulint(project.path(), &args).stdout);
    assert!(
        junit.starts_with("<?xml") && junit.contains("TPR605"),
        "{junit}"
    );

    let report = tpulint(project.path(), &["trace", "report"]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report.stderr));
    let report = text(&report.stdout);
    assert!(
        report.contains("Static findings confirmed at run time (1):\n  train.py:10: TPU605"),
        "{report}"
    );
    assert!(
        report.contains("Runtime events with no static finding (1):\n  train.py:18: TPR101"),
        "{report}"
    );
}

#[test]
fn runtime_findings_on_edited_lines_are_dropped() {
    let project = project("item_per_step");
    let log = real("item_per_step").join("logs/pt_xla_debug.txt");
    let log = log.to_str().unwrap();
    assert_eq!(
        tpulint(project.path(), &["trace", "import", log])
            .status
            .code(),
        Some(1)
    );
    let script = project.path().join("train.py");
    let edited = std::fs::read_to_string(&script)
        .unwrap()
        .replace("print(f\"step {step} loss {loss.item():.4f}\")", "pass");
    std::fs::write(&script, edited).unwrap();
    let report = text(&tpulint(project.path(), &["trace", "report"]).stdout);
    assert!(
        report.contains("1 runtime finding(s) dropped: their lines changed since the trace"),
        "{report}"
    );
}

#[test]
fn bad_input_is_one_error_line_and_exit_2() {
    let project = project("clean_loop");
    for args in [
        &["trace", "import", "missing.log"][..],
        &["trace", "run", "--", "/nonexistent/python", "x.py"][..],
        &["trace", "report"][..],
        &["trace", "report", "--trace", "train.py"][..],
    ] {
        let output = tpulint(project.path(), args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = text(&output.stderr);
        // `trace run` announces the command first; the error is one line after it.
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|line| !line.starts_with("tpulint trace: running"))
            .collect();
        assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
        assert!(errors[0].starts_with("error: "), "{args:?}: {stderr}");
    }
    let unrecognised = project.path().join("notes.txt");
    std::fs::write(&unrecognised, "hello\n").unwrap();
    let output = tpulint(project.path(), &["trace", "import", "notes.txt"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(
        text(&output.stderr).contains(
            "warning: notes.txt: no PT_XLA_DEBUG, metrics or TORCH_LOGS output recognised"
        )
    );
}

/// The real hook under a plain Python (no torch): it chains the `sitecustomize` it shadows,
/// records the project lines that ran, and writes its dump without touching torch_xla.
#[test]
fn the_hook_chains_an_existing_sitecustomize_and_records_coverage() {
    let Ok(python) = which_python() else {
        eprintln!("skipped: no python3 on PATH");
        return;
    };
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".git")).unwrap();
    std::fs::write(
        project.path().join("main.py"),
        "import sys\n\ndef never():\n    return 1\n\nfor i in range(2):\n    print('ran', i)\n",
    )
    .unwrap();
    let theirs = project.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(
        theirs.join("sitecustomize.py"),
        "import sys\nsys.stderr.write('their sitecustomize ran\\n')\n",
    )
    .unwrap();
    let logs = project.path().join("kept");
    let output = Command::new(env!("CARGO_BIN_EXE_tpulint"))
        .args(["trace", "run", "--keep-logs"])
        .arg(&logs)
        .arg("--")
        .arg(&python)
        .arg("main.py")
        .current_dir(project.path())
        .env("PYTHONPATH", &theirs)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("their sitecustomize ran"));
    assert!(text(&output.stdout).contains("ran 1"));
    let dump = std::fs::read_dir(&logs)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| {
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("hook-")
        })
        .expect("the hook's dump");
    let dump: Value = serde_json::from_str(&std::fs::read_to_string(dump).unwrap()).unwrap();
    assert_eq!(dump["torch_xla"], Value::Null);
    let trace: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join(".tpulint/trace.json")).unwrap(),
    )
    .unwrap();
    let lines: Vec<u64> = trace["coverage"]["main.py"]
        .as_array()
        .expect("coverage of main.py")
        .iter()
        .map(|line| line.as_u64().unwrap())
        .collect();
    assert!(lines.contains(&7), "{lines:?}");
    assert!(!lines.contains(&4), "`never()` never ran: {lines:?}");
    // The hook is not part of the project and leaves nothing in it.
    assert!(!project.path().join("sitecustomize.py").exists());
}

fn which_python() -> Result<PathBuf, ()> {
    let output = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .map_err(|_| ())?;
    if !output.status.success() {
        return Err(());
    }
    Ok(PathBuf::from(text(&output.stdout).trim()))
}

/// Ctrl-C (SIGINT) does not kill tpulint before the program: it waits for the program and still
/// writes the trace of what ran.
#[cfg(unix)]
#[test]
fn an_interrupt_still_writes_the_trace() {
    let project = project("clean_loop");
    let script = format!(
        "{} trace run -- sh -c 'sleep 1; echo done' & pid=$!; sleep 0.3; kill -INT $pid; wait $pid",
        env!("CARGO_BIN_EXE_tpulint")
    );
    let output = Command::new("sh")
        .args(["-c", &script])
        .current_dir(project.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("interrupted; writing the trace of what ran"));
    assert!(text(&output.stdout).contains("done"));
    assert!(project.path().join(".tpulint/trace.json").is_file());
}
