//! Builds real virtual environments (`python3 -m venv --without-pip`) holding fake distributions
//! (dist-info METADATA and RECORD) and fake modules, plus fake `/dev`, `/proc`, `/sys` and `/tmp`
//! trees, so the doctor can be tested without torch or a TPU.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tpulint_doctor::{DoctorOptions, Report, SystemPaths};

/// The Python the tests build environments from: `$TPULINT_TEST_PYTHON`, else `/usr/bin/python3`,
/// else `python3` on PATH (a pyenv shim costs half a second per start, the system one does not).
pub fn base_python() -> PathBuf {
    if let Some(explicit) = std::env::var_os("TPULINT_TEST_PYTHON") {
        return PathBuf::from(explicit);
    }
    let system = PathBuf::from("/usr/bin/python3");
    if system.exists() {
        return system;
    }
    PathBuf::from("python3")
}

pub struct TestEnv {
    pub root: tempfile::TempDir,
    pub venv: PathBuf,
    pub python: PathBuf,
    pub site_packages: PathBuf,
    /// `"3.11"`.
    pub python_minor: String,
    pub system: SystemPaths,
}

impl TestEnv {
    /// A fresh virtual environment, plus empty fake system directories with one unheld
    /// `/dev/accel0` (so device findings stay quiet unless a test wants them).
    pub fn new() -> Self {
        let root = tempfile::Builder::new()
            .prefix("tpulint-doctor-")
            .tempdir()
            .expect("temp dir");
        let venv = root.path().join("venv");
        let status = Command::new(base_python())
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv)
            .status()
            .expect("python3 runs");
        assert!(
            status.success(),
            "python3 -m venv failed (on Debian: apt-get install python3-venv)"
        );
        let python = venv.join("bin").join("python");
        let output = Command::new(&python)
            .args([
                "-c",
                "import sys, sysconfig; print(sysconfig.get_paths()['purelib']); print('%d.%d' % sys.version_info[:2])",
            ])
            .output()
            .expect("venv python runs");
        let text = String::from_utf8(output.stdout).unwrap();
        let mut lines = text.lines();
        let site_packages = PathBuf::from(lines.next().unwrap());
        let python_minor = lines.next().unwrap().to_string();
        let system = SystemPaths {
            dev: root.path().join("dev"),
            proc: root.path().join("proc"),
            sys: root.path().join("sys"),
            tmp: root.path().join("tmp"),
            etc: root.path().join("etc"),
        };
        for directory in [
            &system.dev,
            &system.proc,
            &system.sys,
            &system.tmp,
            &system.etc,
        ] {
            fs::create_dir_all(directory).unwrap();
        }
        fs::write(system.dev.join("accel0"), "").unwrap();
        Self {
            root,
            venv,
            python,
            site_packages,
            python_minor,
            system,
        }
    }

    /// Options checking this environment's interpreter with the fake system paths and
    /// `PJRT_DEVICE=TPU` (tests that want it unset remove it).
    pub fn options(&self) -> DoctorOptions {
        let mut options = DoctorOptions::from_process_env(self.root.path().to_path_buf());
        options.python = Some(self.python.clone());
        options.virtual_env = None;
        options.path_var = None;
        options.step_timeout = Duration::from_secs(30);
        options.system = self.system.clone();
        options.env_overrides = vec![
            ("PJRT_DEVICE".to_string(), Some("TPU".to_string())),
            ("TORCH_DEVICE_BACKEND_AUTOLOAD".to_string(), None),
            ("XLA_USE_BF16".to_string(), None),
            ("LD_LIBRARY_PATH".to_string(), None),
            ("WORLD_SIZE".to_string(), None),
            ("RANK".to_string(), None),
            ("LOCAL_RANK".to_string(), None),
            ("TORCH_TPU_SLICEBUILDER_ADDRESSES".to_string(), None),
            ("TORCH_TPU_TOPOLOGY".to_string(), None),
            ("TPU_DEFER_AND_FUSE".to_string(), None),
            ("XLA_FLAGS".to_string(), None),
            ("LIBTPU_INIT_ARGS".to_string(), None),
        ];
        options
    }

    pub fn run(&self) -> Report {
        tpulint_doctor::run(&self.options())
    }

    /// Installs a fake distribution: `METADATA` with `metadata` lines, a `RECORD` listing `files`,
    /// and the files themselves (path relative to site-packages, contents).
    pub fn add_dist(&self, name: &str, version: &str, metadata: &[&str], files: &[(&str, &str)]) {
        let dist_info = self
            .site_packages
            .join(format!("{}-{version}.dist-info", name.replace('-', "_")));
        fs::create_dir_all(&dist_info).unwrap();
        let mut text = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
        for line in metadata {
            text.push_str(line);
            text.push('\n');
        }
        fs::write(dist_info.join("METADATA"), text).unwrap();
        let mut record = String::new();
        for (path, contents) in files {
            self.add_file(path, contents);
            record.push_str(&format!("{path},,\n"));
        }
        let dist_info_name = dist_info
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        record.push_str(&format!(
            "{dist_info_name}/METADATA,,\n{dist_info_name}/RECORD,,\n"
        ));
        fs::write(dist_info.join("RECORD"), record).unwrap();
    }

    /// Removes every installed version of a distribution's metadata (its files stay).
    pub fn remove_dist(&self, name: &str) {
        let prefix = format!("{}-", name.replace('-', "_"));
        for entry in fs::read_dir(&self.site_packages).unwrap().flatten() {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if file_name.starts_with(&prefix) && file_name.ends_with(".dist-info") {
                fs::remove_dir_all(entry.path()).unwrap();
            }
        }
    }

    pub fn add_file(&self, relative: &str, contents: &str) {
        let path = self.site_packages.join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, contents).unwrap();
    }

    /// A fake package `module` whose `__init__.py` sets `__version__` and runs `body`.
    pub fn module(&self, module: &str, version: &str, body: &str) -> (String, String) {
        (
            format!("{module}/__init__.py"),
            format!("__version__ = {version:?}\n{body}\n"),
        )
    }

    pub fn add_package(&self, name: &str, version: &str, metadata: &[&str], body: &str) {
        let module = name.replace('-', "_");
        let (path, contents) = self.module(&module, version, body);
        self.add_dist(name, version, metadata, &[(&path, &contents)]);
    }

    pub fn python_text(&self) -> String {
        self.python.display().to_string()
    }
}

/// A fake torch distribution.
pub fn install_torch(env: &TestEnv, version: &str) {
    env.add_package(
        "torch",
        version,
        &["Summary: Tensors and Dynamic neural networks"],
        "",
    );
}

/// A fake libtpu with its shared library.
pub fn install_libtpu(env: &TestEnv, version: &str) {
    env.add_dist(
        "libtpu",
        version,
        &["Summary: Google Cloud TPU runtime library"],
        &[("libtpu/__init__.py", ""), ("libtpu/libtpu.so", "")],
    );
}

/// A fake Google TorchTPU distribution: its metadata lines, and `torch_tpu/__init__.py` with
/// `init` (the `_internal` package is what tells Google's build from Sophgo's).
pub fn install_google_torch_tpu(env: &TestEnv, version: &str, metadata: &[&str], init: &str) {
    env.add_dist(
        "torch_tpu",
        version,
        metadata,
        &[
            ("torch_tpu/__init__.py", init),
            ("torch_tpu/_internal/__init__.py", ""),
        ],
    );
}

/// Waits (up to 5 s) until process `pid` has `device` open and, when given, its command line
/// contains `needle`.
pub fn wait_until_open(pid: u32, device: &Path, needle: Option<&str>) {
    let fd_dir = format!("/proc/{pid}/fd");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        let opened = fs::read_dir(&fd_dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|fd| fs::read_link(fd.path()).is_ok_and(|target| target == device));
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let named = needle.is_none_or(|needle| String::from_utf8_lossy(&cmdline).contains(needle));
        if opened && named {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Pids of live processes whose command line contains `needle` (zombies excluded).
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let state = fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if state
            .split(") ")
            .nth(1)
            .is_some_and(|rest| rest.starts_with('Z'))
        {
            continue;
        }
        let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            found.push(pid);
        }
    }
    found
}

pub fn ids(report: &Report) -> Vec<&str> {
    report.findings.iter().map(|f| f.id.as_str()).collect()
}

/// Ids of the errors and warnings (info findings such as `torch-xla-frozen` left out).
pub fn problem_ids(report: &Report) -> Vec<&str> {
    report
        .findings
        .iter()
        .filter(|f| f.severity != tpulint_doctor::Severity::Info)
        .map(|f| f.id.as_str())
        .collect()
}

pub fn all_commands(report: &Report, id: &str) -> Vec<String> {
    report
        .findings
        .iter()
        .filter(|f| f.id == id)
        .flat_map(|f| f.fixes.iter().flat_map(|fix| fix.commands.clone()))
        .collect()
}

pub fn path_str(path: &Path) -> String {
    path.display().to_string()
}
