//! What the end-to-end tests share: sample scripts, a temporary project and a run of the
//! built binary in it.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A CUDA training script with findings from several families (no safe fixes).
pub const CUDA_SCRIPT: &str = r#"import torch

device = torch.device("cuda")


def train(model, loader, optimizer):
    for images, targets in loader:
        images = images.cuda()
        loss = model(images).sum()
        loss.backward()
        optimizer.step()
        print(loss.item())
"#;

/// A PyTorch/XLA script whose only finding has a safe fix (TPU601).
pub const XLA_SCRIPT: &str = "import torch_xla\nimport torch_xla.core.xla_model as xm\n\n\ndef step():\n    xm.mark_step()\n";

/// A file without findings.
pub const CLEAN_SCRIPT: &str = "import torch\n\n\ndef add(a, b):\n    return a + b\n";

pub struct Project {
    pub directory: tempfile::TempDir,
}

impl Project {
    pub fn new(files: &[(&str, &str)]) -> Project {
        let directory = tempfile::tempdir().expect("temporary directory");
        let project = Project { directory };
        for (path, content) in files {
            project.write(path, content.as_bytes());
        }
        project
    }

    pub fn root(&self) -> &Path {
        self.directory.path()
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root().join(relative)
    }

    pub fn write(&self, relative: &str, content: &[u8]) {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }

    pub fn read(&self, relative: &str) -> Vec<u8> {
        std::fs::read(self.path(relative)).expect("read")
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_in(".", args, None)
    }

    pub fn run_in(&self, directory: &str, args: &[&str], stdin: Option<&[u8]>) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tpulint"));
        command
            .args(args)
            .current_dir(self.path(directory))
            .env_remove("RUST_BACKTRACE")
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("spawn tpulint");
        if let Some(input) = stdin {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(input)
                .expect("write stdin");
        }
        Run(child.wait_with_output().expect("wait"))
    }
}

pub struct Run(pub Output);

impl Run {
    pub fn code(&self) -> i32 {
        self.0.status.code().expect("exit code")
    }
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.0.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout()))
    }
    /// `path CODE` for each line of concise output.
    pub fn path_codes(&self) -> Vec<String> {
        self.stdout()
            .lines()
            .zip(self.codes())
            .map(|(line, code)| format!("{} {code}", line.split(':').next().unwrap_or("")))
            .collect()
    }
    /// Codes in concise output.
    pub fn codes(&self) -> Vec<String> {
        self.stdout()
            .lines()
            .filter_map(|line| {
                line.split(": ")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                    .filter(|code| code.starts_with("TPU"))
                    .map(str::to_string)
            })
            .collect()
    }
}

/// A package with the three scripts.
pub fn cuda_project() -> Project {
    Project::new(&[
        ("pkg/train.py", CUDA_SCRIPT),
        ("pkg/xla_step.py", XLA_SCRIPT),
        ("pkg/clean.py", CLEAN_SCRIPT),
    ])
}

impl Project {
    /// Starts the binary in the project without waiting (for `--watch`).
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        Command::new(env!("CARGO_BIN_EXE_tpulint"))
            .args(args)
            .current_dir(self.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tpulint")
    }
}
