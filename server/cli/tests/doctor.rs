//! `tpulint doctor` end to end: exit codes (0 ready, 1 not ready, 2 usage), output formats, and a
//! ready environment simulated with a real virtual environment, fake packages and a fake `/dev`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tpulint(args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tpulint"));
    command
        .args(args)
        .env_remove("VIRTUAL_ENV")
        .env("NO_COLOR", "1");
    for (name, value) in envs {
        command.env(name, value);
    }
    command.output().expect("tpulint runs")
}

fn base_python() -> PathBuf {
    std::env::var_os("TPULINT_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let system = PathBuf::from("/usr/bin/python3");
            if system.exists() {
                system
            } else {
                PathBuf::from("python3")
            }
        })
}

#[test]
fn missing_interpreter_is_not_ready_in_every_format() {
    let root = tempfile::tempdir().unwrap();
    let missing = root.path().join("nope/bin/python");
    let missing = missing.to_str().unwrap();
    let text = tpulint(&["doctor", "--python", missing], &[]);
    assert_eq!(text.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.contains("error[interpreter-not-found]"), "{stdout}");
    assert!(stdout.contains("verdict: not ready"));

    let json = tpulint(
        &["doctor", "--python", missing, "--output-format", "json"],
        &[],
    );
    assert_eq!(json.status.code(), Some(1));
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(value["verdict"], "not_ready");
    assert_eq!(value["findings"][0]["id"], "interpreter-not-found");

    let markdown = tpulint(
        &["doctor", "--python", missing, "--output-format", "markdown"],
        &[],
    );
    assert!(String::from_utf8_lossy(&markdown.stdout).starts_with("# TPU environment:"));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(
        tpulint(&["doctor", "--timeout", "0"], &[]).status.code(),
        Some(2)
    );
    assert_eq!(
        tpulint(&["doctor", "--output-format", "yaml"], &[])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn a_ready_environment_exits_0() {
    let root = tempfile::tempdir().unwrap();
    let venv = root.path().join("venv");
    let status = Command::new(base_python())
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(status.success());
    let python = venv.join("bin/python");
    let output = Command::new(&python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .unwrap();
    let site = PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
    for (name, version, module) in [
        ("torch", "2.8.0", "torch"),
        ("torch_xla", "2.8.0", "torch_xla"),
        ("libtpu", "0.0.21", "libtpu"),
    ] {
        let dist_info = site.join(format!("{name}-{version}.dist-info"));
        fs::create_dir_all(&dist_info).unwrap();
        fs::write(
            dist_info.join("METADATA"),
            format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
        )
        .unwrap();
        fs::create_dir_all(site.join(module)).unwrap();
        fs::write(
            site.join(module).join("__init__.py"),
            format!("__version__ = '{version}'\n"),
        )
        .unwrap();
    }
    let system = root.path().join("system");
    for directory in ["dev", "proc", "sys", "tmp"] {
        fs::create_dir_all(system.join(directory)).unwrap();
    }
    fs::write(system.join("dev/accel0"), "").unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_tpulint"));
    command
        .args(["doctor", "--python", python.to_str().unwrap()])
        .env("PJRT_DEVICE", "TPU")
        .env("NO_COLOR", "1")
        .env_remove("XLA_USE_BF16")
        .env("TPULINT_DOCTOR_DEV", system.join("dev"))
        .env("TPULINT_DOCTOR_PROC", system.join("proc"))
        .env("TPULINT_DOCTOR_SYS", system.join("sys"))
        .env("TPULINT_DOCTOR_TMP", system.join("tmp"));
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("verdict: ready"), "{stdout}");
    assert!(stdout.contains("torch_xla 2.8.0"), "{stdout}");
}

#[test]
fn explain_prints_a_declared_finding_and_rejects_unknown_ids() {
    let output = tpulint(&["doctor", "--explain", "torch-tpu-torch-mismatch"], &[]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with("torch-tpu-torch-mismatch (error; warning when "),
        "{stdout}"
    );
    assert!(stdout.contains("why:"), "{stdout}");
    assert!(stdout.contains("$ {python} -m pip install"), "{stdout}");
    assert!(
        stdout.contains("docs/doctor.md#torch-tpu-torch-mismatch"),
        "{stdout}"
    );

    let output = tpulint(
        &[
            "doctor",
            "--explain",
            "stale-libtpu-lockfile",
            "--output-format",
            "json",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(json["id"], "stale-libtpu-lockfile");
    assert_eq!(json["severity"], "warning");
    assert!(
        json["fix"][0]["commands"][0]
            .as_str()
            .unwrap()
            .contains("{lockfile}")
    );

    let output = tpulint(&["doctor", "--explain", "no-such-finding"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: unknown finding id `no-such-finding`"),
        "{stderr}"
    );
    let output = tpulint(&["doctor", "--explain", "torch-tpu-mismatch"], &[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("similar: "), "{stderr}");
    assert!(stderr.contains("torch-tpu-torch-mismatch"), "{stderr}");
}
