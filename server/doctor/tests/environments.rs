//! End-to-end checks of `tpulint_doctor::run` on real virtual environments with fake packages:
//! each scenario asserts the specific findings, the exact fix commands and the verdict.

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{
    TestEnv, all_commands, ids, install_google_torch_tpu, install_libtpu, install_torch,
    problem_ids, processes_mentioning, wait_until_open,
};
use tpulint_doctor::compat::compatibility;
use tpulint_doctor::report::Origin;
use tpulint_doctor::{OutputFormat, Severity, Verdict, render};

const TORCH_XLA_BODY: &str = "import torch";

fn install_torch_xla(env: &TestEnv, version: &str, body: &str) {
    env.add_package(
        "torch_xla",
        version,
        &["Summary: XLA bridge for PyTorch"],
        body,
    );
}

#[test]
fn nothing_installed_recommends_the_newest_matching_pair() {
    let env = TestEnv::new();
    let report = env.run();
    assert_eq!(report.verdict, Verdict::NotReady);
    assert_eq!(ids(&report), vec!["no-tpu-backend"], "{report:#?}");
    let release = compatibility()
        .newest_torch_xla_for_python(&env.python_minor)
        .expect("the test Python has torch_xla wheels");
    let python = env.python_text();
    let commands = all_commands(&report, "no-tpu-backend");
    // TorchTPU first (the successor), pinned to a validated pairing because its wheel does not
    // pin torch; in this interpreter when TorchTPU has wheels for it (3.11-3.14).
    let torch_tpu = "-m pip install --pre --index-url \"https://oauth2accesstoken:$(gcloud auth print-access-token)@us-python.pkg.dev/ml-oss-artifacts-transient/torch-tpu-virtual-registry/simple/\" 'torch==2.13.0' 'torch_tpu==0.1.2.dev20261006000518' 'libtpu==0.0.47'";
    if ["3.11", "3.12", "3.13", "3.14"].contains(&env.python_minor.as_str()) {
        assert_eq!(commands[0], format!("{python} {torch_tpu}"));
    } else {
        assert_eq!(commands[1], format!(".venv-tpu/bin/python {torch_tpu}"));
    }
    // PyTorch/XLA's last release is the alternative.
    assert!(
        commands.contains(&format!(
            "{python} -m pip install 'torch=={}' 'torch_xla[tpu]=={}'",
            release.torch, release.version
        )),
        "{commands:?}"
    );
    let interpreter = report.interpreter.as_ref().unwrap();
    assert!(interpreter.virtualenv);
    assert_eq!(
        interpreter.version.rsplit_once('.').unwrap().0,
        env.python_minor
    );
    assert!(
        report
            .imports
            .iter()
            .all(|fact| fact.status == "not_installed")
    );
}

#[test]
fn torch_alone_is_not_a_tpu_environment() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    let report = env.run();
    assert_eq!(report.verdict, Verdict::NotReady);
    let finding = report.finding("no-tpu-backend").expect("no backend");
    assert!(
        finding.detail.contains("torch 2.8.0 is installed"),
        "{}",
        finding.detail
    );
    let torch = report
        .imports
        .iter()
        .find(|fact| fact.module == "torch")
        .unwrap();
    assert_eq!(torch.status, "ok");
    assert_eq!(torch.version.as_deref(), Some("2.8.0"));
}

#[test]
fn matching_torch_and_torch_xla_is_ready() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    install_torch_xla(&env, "2.8.0", TORCH_XLA_BODY);
    install_libtpu(&env, "0.0.21");
    let report = env.run();
    // Ready; the only note is that PyTorch/XLA is frozen.
    assert_eq!(
        ids(&report),
        vec!["torch-xla-frozen"],
        "{:#?}",
        report.findings
    );
    assert_eq!(report.verdict, Verdict::Ready);
    assert_eq!(report.exit_code(), 0);
    assert_eq!(
        report.environment.get("PJRT_DEVICE").map(String::as_str),
        Some("TPU")
    );
    for module in ["torch", "torch_xla", "libtpu"] {
        let fact = report.imports.iter().find(|f| f.module == module).unwrap();
        assert_eq!(fact.status, "ok", "{module}: {fact:?}");
    }
}

#[test]
fn unset_pjrt_device_degrades_with_the_export_to_add() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    install_torch_xla(&env, "2.8.0", TORCH_XLA_BODY);
    install_libtpu(&env, "0.0.21");
    let mut options = env.options();
    options.env_overrides[0].1 = None;
    let report = tpulint_doctor::run(&options);
    assert_eq!(problem_ids(&report), vec!["pjrt-device-unset"]);
    assert_eq!(report.verdict, Verdict::Degraded);
    assert_eq!(report.exit_code(), 1);
    assert_eq!(
        all_commands(&report, "pjrt-device-unset"),
        vec!["export PJRT_DEVICE=TPU"]
    );
}

#[test]
fn mismatched_versions_get_both_ways_out() {
    let env = TestEnv::new();
    install_torch(&env, "2.7.0");
    install_torch_xla(&env, "2.8.0", TORCH_XLA_BODY);
    install_libtpu(&env, "0.0.21");
    let report = env.run();
    assert_eq!(report.verdict, Verdict::NotReady);
    let finding = report
        .finding("torch-xla-version-mismatch")
        .expect("mismatch found");
    assert_eq!(finding.severity, Severity::Error);
    assert_eq!(finding.title, "torch 2.7.0 does not match torch_xla 2.8.0");
    let python = env.python_text();
    assert_eq!(
        all_commands(&report, "torch-xla-version-mismatch"),
        vec![
            format!("{python} -m pip install 'torch==2.8.0' 'torch_xla[tpu]==2.8.0'"),
            format!("{python} -m pip install 'torch_xla[tpu]==2.7.0'"),
        ]
    );
}

#[test]
fn torch_xla_without_libtpu_needs_the_tpu_extra() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    install_torch_xla(&env, "2.8.0", TORCH_XLA_BODY);
    let report = env.run();
    assert_eq!(problem_ids(&report), vec!["libtpu-missing"]);
    assert_eq!(
        all_commands(&report, "libtpu-missing"),
        vec![format!(
            "{} -m pip install 'torch_xla[tpu]==2.8.0'",
            env.python_text()
        )]
    );
}

#[test]
fn google_torch_tpu_without_libtpu() {
    let env = TestEnv::new();
    install_torch(&env, "2.10.0");
    install_google_torch_tpu(
        &env,
        "0.1.1",
        &[
            "License-Expression: Apache-2.0",
            "Requires-Dist: torch>=2.10.0",
            "Requires-Dist: libtpu>=0.0.38",
        ],
        "__version__ = '0.1.1'\nimport torch\n",
    );
    let report = env.run();
    let origin = report
        .distributions
        .iter()
        .find(|d| d.name == "torch_tpu")
        .and_then(|d| d.origin);
    assert_eq!(origin, Some(Origin::Google));
    assert_eq!(report.verdict, Verdict::NotReady);
    assert!(
        report.finding("no-tpu-backend").is_none(),
        "{:?}",
        ids(&report)
    );
    assert_eq!(
        all_commands(&report, "torch-tpu-libtpu-missing"),
        vec![format!(
            "{} -m pip install 'libtpu==0.0.47'",
            env.python_text()
        )]
    );
    // TorchTPU carries locks for Python 3.11-3.14.
    assert_eq!(
        report.finding("torch-tpu-python-version").is_some(),
        !["3.11", "3.12", "3.13", "3.14"].contains(&env.python_minor.as_str()),
        "{:?}",
        ids(&report)
    );
    let torch_tpu = report
        .imports
        .iter()
        .find(|f| f.module == "torch_tpu")
        .unwrap();
    assert_eq!(torch_tpu.status, "ok");
}

#[test]
fn google_torch_tpu_with_old_torch() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    install_libtpu(&env, "0.0.46");
    install_google_torch_tpu(&env, "0.1.1", &["Requires-Dist: libtpu>=0.0.38"], "");
    let report = env.run();
    let finding = report
        .finding("torch-tpu-torch-too-old")
        .expect("torch too old");
    assert_eq!(finding.severity, Severity::Error);
    assert_eq!(
        finding.fixes[0].commands,
        vec![format!(
            "{} -m pip install 'torch==2.13.0' --index-url https://download.pytorch.org/whl/cpu",
            env.python_text()
        )]
    );
}

#[test]
fn sophgo_torch_tpu_is_recognised() {
    let env = TestEnv::new();
    install_torch(&env, "2.1.0");
    env.add_dist(
        "torch_tpu",
        "2.1.0.post1",
        &[
            "Summary: TPU bridge for PyTorch",
            "Home-page: https://github.com/sophgo/torch-tpu",
            "Author: sophgo",
            "Author-email: dev@sophgo.com",
        ],
        &[
            ("torch_tpu/__init__.py", "__version__ = '2.1.0.post1'\n"),
            ("torch_tpu/tpu/backend.py", "BACKEND='SG2260'\n"),
        ],
    );
    let report = env.run();
    let origin = report
        .distributions
        .iter()
        .find(|d| d.name == "torch_tpu")
        .and_then(|d| d.origin);
    assert_eq!(origin, Some(Origin::Sophgo));
    let finding = report.finding("sophgo-torch-tpu").expect("Sophgo detected");
    assert_eq!(finding.severity, Severity::Error);
    assert!(finding.detail.contains("sophgo"), "{}", finding.detail);
    let python = env.python_text();
    assert_eq!(
        finding.fixes[0].commands,
        vec![
            format!("{python} -m pip uninstall -y torch_tpu"),
            format!(
                "{python} -m pip install --pre --index-url \"{}\" 'torch==2.13.0' 'torch_tpu==0.1.2.dev20261006000518' 'libtpu==0.0.47'",
                compatibility().torch_tpu.index_url
            ),
        ]
    );
    assert!(report.finding("no-tpu-backend").is_some());
    assert_eq!(report.verdict, Verdict::NotReady);
}

#[test]
fn undefined_symbol_on_import_is_an_abi_mismatch() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    install_libtpu(&env, "0.0.21");
    install_torch_xla(
        &env,
        "2.8.0",
        "import torch\nraise ImportError('/venv/lib/python3/site-packages/_XLAC.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZN5torch4lazy13MetricFnValueB5cxx11Ed')",
    );
    let report = env.run();
    assert_eq!(
        problem_ids(&report),
        vec!["torch-xla-abi-mismatch"],
        "{:#?}",
        report.findings
    );
    let finding = &report.findings[0];
    assert!(
        finding
            .detail
            .contains("_ZN5torch4lazy13MetricFnValueB5cxx11Ed")
    );
    assert_eq!(
        finding.fixes[0].commands,
        vec![format!(
            "{} -m pip install 'torch==2.8.0' 'torch_xla[tpu]==2.8.0' --force-reinstall",
            env.python_text()
        )]
    );
    let fact = report
        .imports
        .iter()
        .find(|f| f.module == "torch_xla")
        .unwrap();
    assert_eq!(fact.status, "failed");
}

#[test]
fn hanging_import_is_killed_and_reported() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    install_libtpu(&env, "0.0.21");
    install_torch_xla(&env, "2.8.0", "import time\ntime.sleep(600)");
    let mut options = env.options();
    options.step_timeout = Duration::from_secs(2);
    let started = Instant::now();
    let report = tpulint_doctor::run(&options);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let finding = report.finding("import-timed-out").expect("hang reported");
    assert_eq!(finding.title, "`import torch_xla` hangs");
    assert_eq!(report.verdict, Verdict::NotReady);
    // Other imports still ran.
    let torch = report.imports.iter().find(|f| f.module == "torch").unwrap();
    assert_eq!(torch.status, "ok");
    let needle = env.venv.display().to_string();
    assert_eq!(
        processes_mentioning(&needle),
        Vec::<u32>::new(),
        "leftover processes"
    );
}

#[test]
fn missing_and_non_executable_interpreters_are_findings() {
    let env = TestEnv::new();
    let mut options = env.options();
    options.python = Some(env.root.path().join("nowhere/bin/python"));
    let report = tpulint_doctor::run(&options);
    assert_eq!(report.verdict, Verdict::NotReady);
    assert!(report.interpreter.is_none());
    let finding = report.finding("interpreter-not-found").expect("missing");
    assert!(finding.title.contains("nowhere/bin/python"));
    assert!(!finding.fixes.is_empty());

    let script = env.root.path().join("python-not-executable");
    fs::write(&script, "#!/bin/sh\n").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o644)).unwrap();
    options.python = Some(script.clone());
    let report = tpulint_doctor::run(&options);
    let finding = report
        .finding("interpreter-not-executable")
        .expect("not executable");
    assert_eq!(
        finding.fixes[0].commands,
        vec![format!("chmod +x {}", script.display())]
    );
}

#[test]
fn a_hanging_interpreter_is_killed_with_its_process_group() {
    let env = TestEnv::new();
    let fake = env.root.path().join("hanging-python");
    // The inner shell mentions the fake's path in its command line, so leftovers can be found.
    fs::write(&fake, "#!/bin/sh\nsh -c 'sleep 300; :' \"$0\" &\nwait\n").unwrap();
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    let mut options = env.options();
    options.python = Some(fake.clone());
    options.total_timeout = Some(Duration::from_secs(2));
    let started = Instant::now();
    let report = tpulint_doctor::run(&options);
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(ids(&report), vec!["probe-timed-out"]);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        processes_mentioning(&fake.display().to_string()),
        Vec::<u32>::new(),
        "leftover processes"
    );
}

#[test]
fn a_non_python_interpreter_fails_cleanly() {
    let env = TestEnv::new();
    let fake = env.root.path().join("not-python");
    fs::write(
        &fake,
        "#!/bin/sh\necho 'SyntaxError: invalid syntax' >&2\nexit 1\n",
    )
    .unwrap();
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    let mut options = env.options();
    options.python = Some(fake);
    let report = tpulint_doctor::run(&options);
    let finding = report.finding("probe-failed").expect("probe failed");
    assert!(finding.detail.contains("Exited with code 1"));
    assert!(finding.detail.contains("SyntaxError"));
}

#[test]
fn device_held_by_another_process_names_it_and_how_to_stop_it() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    install_torch_xla(&env, "2.8.0", TORCH_XLA_BODY);
    install_libtpu(&env, "0.0.21");
    let device = env.system.dev.join("accel0");
    let second = env.system.dev.join("accel1");
    fs::write(&second, "").unwrap();
    // The holder opens both nodes, then becomes `sleep`.
    let (report, pid) = run_while_held(
        &env,
        "exec 3<\"$1\" 4<\"$2\"; exec sleep 60",
        &[&device, &second],
        // The command line after the `exec` (arguments are NUL-separated), not bash's, whose
        // script text also says `sleep 60`: the doctor must not read the holder mid-exec.
        Some("sleep\u{0}60"),
    );
    let finding = report.finding("tpu-device-busy").expect("holder found");
    assert_eq!(
        finding.title,
        format!(
            "{}, {} are held by process {}",
            device.display(),
            second.display(),
            pid
        )
    );
    assert_eq!(
        ids(&report)
            .iter()
            .filter(|id| **id == "tpu-device-busy")
            .count(),
        1
    );
    assert!(finding.detail.contains("sleep 60"), "{}", finding.detail);
    assert_eq!(
        finding.fixes[0].commands,
        vec![format!("kill {}", pid), format!("kill -9 {}", pid)]
    );
    // The lock file belongs to the holder, so it is not stale.
    assert!(report.finding("stale-libtpu-lockfile").is_none());
    assert_eq!(report.devices.holders.len(), 2);
    assert_eq!(report.verdict, Verdict::NotReady);
}

#[test]
fn stale_lockfile_and_missing_device_nodes() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    install_torch_xla(&env, "2.8.0", TORCH_XLA_BODY);
    install_libtpu(&env, "0.0.21");
    let lockfile = env.system.tmp.join("libtpu_lockfile");
    fs::write(&lockfile, "").unwrap();
    let report = env.run();
    assert_eq!(problem_ids(&report), vec!["stale-libtpu-lockfile"]);
    assert_eq!(
        all_commands(&report, "stale-libtpu-lockfile"),
        vec![format!("rm -f {}", lockfile.display())]
    );
    assert_eq!(report.verdict, Verdict::Degraded);

    // A v4 chip on the PCI bus, but no device node (a container started without --device).
    fs::remove_file(env.system.dev.join("accel0")).unwrap();
    fs::remove_file(&lockfile).unwrap();
    let chip = env.system.sys.join("bus/pci/devices/0000:00:04.0");
    fs::create_dir_all(&chip).unwrap();
    fs::write(chip.join("vendor"), "0x1ae0\n").unwrap();
    fs::write(chip.join("device"), "0x005e\n").unwrap();
    let report = env.run();
    assert_eq!(problem_ids(&report), vec!["tpu-device-nodes-missing"]);
    assert!(report.findings[0].detail.contains("v4 (0000:00:04.0)"));

    // Nothing at all: not a TPU machine.
    fs::remove_dir_all(env.system.sys.join("bus")).unwrap();
    let report = env.run();
    assert_eq!(problem_ids(&report), vec!["no-tpu-device"]);
    // It speaks of the backend present.
    assert!(
        report.findings[0]
            .detail
            .contains("torch_xla falls back to PJRT_DEVICE=CPU"),
        "{}",
        report.findings[0].detail
    );
}

#[test]
fn vfio_nodes_count_as_tpu_devices() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    install_torch_xla(&env, "2.8.0", TORCH_XLA_BODY);
    install_libtpu(&env, "0.0.21");
    fs::remove_file(env.system.dev.join("accel0")).unwrap();
    fs::create_dir_all(env.system.dev.join("vfio")).unwrap();
    fs::write(env.system.dev.join("vfio/vfio"), "").unwrap();
    fs::write(env.system.dev.join("vfio/0"), "").unwrap();
    let report = env.run();
    assert_eq!(report.verdict, Verdict::Ready, "{:?}", ids(&report));
    let nodes: Vec<_> = report
        .devices
        .nodes
        .iter()
        .map(|n| n.path.clone())
        .collect();
    assert_eq!(nodes, vec![env.system.dev.join("vfio/0")]);
}

#[test]
fn companions_and_known_bad_combinations() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    install_torch_xla(&env, "2.8.0", TORCH_XLA_BODY);
    install_libtpu(&env, "0.0.21");
    env.add_package("torchvision", "0.21.0", &[], "");
    env.add_package("tensorflow", "2.20.0", &[], "");
    env.add_dist("libtpu-nightly", "0.1.dev20241010", &[], &[]);
    let report = env.run();
    let mut found = problem_ids(&report);
    found.sort_unstable();
    assert_eq!(
        found,
        vec![
            "libtpu-nightly-conflict",
            "tensorflow-with-torch-xla",
            "torchvision-mismatch"
        ]
    );
    let python = env.python_text();
    assert_eq!(
        all_commands(&report, "torchvision-mismatch"),
        vec![format!(
            "{python} -m pip install 'torchvision~=0.23.0' --no-deps"
        )]
    );
    assert_eq!(
        all_commands(&report, "tensorflow-with-torch-xla"),
        vec![
            format!("{python} -m pip uninstall -y tensorflow"),
            format!("{python} -m pip install tensorflow-cpu"),
        ]
    );
    assert_eq!(report.verdict, Verdict::Degraded);
}

/// A fake torch whose `ones` supports `@`, `.device` and `.cpu().tolist()` on the "xla" device
/// only; the product lands on `landed`.
fn fake_torch_for_allocation(landed: &str) -> String {
    format!(
        r#"
class _Device:
    def __init__(self, text): self.type = text.split(":")[0]; self._text = text
    def __str__(self): return self._text
class _T:
    def __init__(self, device): self.device = _Device(device)
    def __matmul__(self, other): return _T({landed:?})
    def cpu(self): return self
    def tolist(self): return [[2.0, 2.0], [2.0, 2.0]]
def ones(*shape, device=None):
    if device != "xla":
        raise RuntimeError("Could not run 'aten::empty.memory_format' with arguments from the '%s' backend" % device)
    return _T("xla:0")
"#
    )
}

/// torch_xla with `torch_xla.runtime.device_type()` answering `hardware`.
fn install_torch_xla_on(env: &TestEnv, hardware: &str) {
    env.add_dist(
        "torch_xla",
        "2.8.0",
        &["Summary: XLA bridge for PyTorch"],
        &[
            (
                "torch_xla/__init__.py",
                "__version__ = '2.8.0'\nimport torch\n",
            ),
            (
                "torch_xla/runtime.py",
                &format!("def device_type():\n    return {hardware:?}\n"),
            ),
        ],
    );
}

#[test]
fn allocation_runs_the_matmul_and_reports_failures() {
    let env = TestEnv::new();
    env.add_package("torch", "2.8.0", &[], &fake_torch_for_allocation("xla:0"));
    install_torch_xla_on(&env, "TPU");
    install_libtpu(&env, "0.0.21");
    let mut options = env.options();
    options.allocate = true;
    let report = tpulint_doctor::run(&options);
    assert_eq!(report.verdict, Verdict::Ready, "{:#?}", report.findings);
    assert_eq!(report.allocation.len(), 1);
    assert_eq!(report.allocation[0].backend, "torch_xla");
    assert_eq!(report.allocation[0].status, "ok");
    assert_eq!(report.allocation[0].device.as_deref(), Some("xla:0"));
    assert_eq!(report.allocation[0].hardware.as_deref(), Some("TPU"));

    // The same check failing on the device.
    env.add_file(
        "torch/__init__.py",
        "__version__ = '2.8.0'\ndef ones(*shape, device=None):\n    raise RuntimeError('TPU initialization failed: open(/dev/vfio/0): Device or resource busy')\n",
    );
    let report = tpulint_doctor::run(&options);
    let finding = report
        .finding("tpu-allocation-failed")
        .expect("allocation failure");
    assert!(
        finding.detail.contains("Device or resource busy"),
        "{}",
        finding.detail
    );
    assert_eq!(report.verdict, Verdict::NotReady);
}

/// `--allocate` used to say "ok" whenever the matmul returned the right numbers, even on the CPU.
#[test]
fn an_allocation_that_lands_on_the_cpu_fails_the_check() {
    // torch_xla running on PJRT's CPU device (PJRT_DEVICE=CPU, or no libtpu found).
    let env = TestEnv::new();
    env.add_package("torch", "2.8.0", &[], &fake_torch_for_allocation("xla:0"));
    install_torch_xla_on(&env, "CPU");
    install_libtpu(&env, "0.0.21");
    let mut options = env.options();
    options.allocate = true;
    let report = tpulint_doctor::run(&options);
    assert_eq!(
        report.allocation[0].status, "not_on_tpu",
        "{:?}",
        report.allocation
    );
    assert_eq!(report.allocation[0].hardware.as_deref(), Some("CPU"));
    let finding = report
        .finding("tpu-allocation-not-on-tpu")
        .expect("CPU allocation is a failure");
    assert_eq!(finding.severity, Severity::Error);
    assert_eq!(
        finding.title,
        "The \"xla\" matmul ran on xla:0 backed by CPU, not on a TPU"
    );
    assert_eq!(report.verdict, Verdict::NotReady);
    let text = render(&report, OutputFormat::Text { color: false });
    assert!(
        text.contains("allocation:   torch_xla on xla:0 (CPU): not on tpu"),
        "{text}"
    );

    // A fake that quietly computes on the CPU tensor type.
    env.add_file("torch/__init__.py", &fake_torch_for_allocation("cpu"));
    install_torch_xla_on(&env, "TPU");
    let report = tpulint_doctor::run(&options);
    assert_eq!(report.allocation[0].device.as_deref(), Some("cpu"));
    let finding = report
        .finding("tpu-allocation-not-on-tpu")
        .expect("landed on cpu");
    assert_eq!(finding.title, "The \"xla\" matmul ran on cpu, not on a TPU");
    assert!(
        finding.fixes[0].commands[0].contains("xr.device_type()"),
        "{:?}",
        finding.fixes
    );
}

#[test]
fn renderings_carry_the_verdict_and_fixes() {
    let env = TestEnv::new();
    install_torch(&env, "2.7.0");
    install_torch_xla(&env, "2.8.0", TORCH_XLA_BODY);
    install_libtpu(&env, "0.0.21");
    let report = env.run();
    let json: serde_json::Value =
        serde_json::from_str(&render(&report, OutputFormat::Json)).expect("valid JSON");
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["verdict"], "not_ready");
    assert_eq!(json["findings"][0]["id"], "torch-xla-version-mismatch");
    assert_eq!(json["findings"][0]["severity"], "error");
    assert!(json["findings"][0]["fixes"][0]["commands"][0].is_string());
    assert_eq!(json["interpreter"]["source"], "flag");

    let text = render(&report, OutputFormat::Text { color: false });
    assert!(
        text.contains(
            "error[torch-xla-version-mismatch]: torch 2.7.0 does not match torch_xla 2.8.0"
        )
    );
    assert!(text.contains("$ "));
    assert!(
        text.contains("verdict: not ready (1 error, 0 warnings, 1 info)"),
        "{text}"
    );
    assert!(
        text.contains("more: tpulint doctor --explain torch-xla-version-mismatch"),
        "{text}"
    );
    assert_eq!(
        json["findings"][0]["url"],
        "https://github.com/tpulint/tpulint/blob/main/docs/doctor.md#torch-xla-version-mismatch"
    );
    assert!(!text.contains('\x1b'));
    assert!(render(&report, OutputFormat::Text { color: true }).contains("\x1b[1;31m"));

    assert_eq!(
        report.summary_line(),
        "TPU environment not ready: 1 error (torch-xla-version-mismatch)"
    );
    let commands = report.suggested_commands();
    assert_eq!(commands.len(), 2);
    assert!(
        commands[0]
            .0
            .starts_with("torch 2.7.0 does not match torch_xla 2.8.0: Install")
    );
    assert!(
        commands[0]
            .1
            .ends_with("'torch==2.8.0' 'torch_xla[tpu]==2.8.0'")
    );

    let markdown = render(&report, OutputFormat::Markdown);
    assert!(markdown.starts_with("# TPU environment: ❌ not ready"));
    assert!(markdown.contains("```sh\n"));
    assert!(markdown.contains("| interpreter |"));
    // Each finding links to its page.
    assert!(
        markdown.contains("## ❌ Error [`torch-xla-version-mismatch`](https://github.com/tpulint/tpulint/blob/main/docs/doctor.md#torch-xla-version-mismatch): torch 2.7.0 does not match torch_xla 2.8.0"),
        "{markdown}"
    );
}

#[test]
fn a_release_without_wheels_for_this_python() {
    let env = TestEnv::new();
    install_torch(&env, "2.0.0");
    install_torch_xla(&env, "2.0", TORCH_XLA_BODY);
    install_libtpu(&env, "0.0.1");
    let report = env.run();
    if env.python_minor == "3.8" {
        assert!(report.finding("python-unsupported-by-torch-xla").is_none());
        return;
    }
    let finding = report
        .finding("python-unsupported-by-torch-xla")
        .expect("2.0 has Python 3.8 wheels only");
    assert_eq!(
        finding.title,
        format!("torch_xla 2.0 has no build for Python {}", env.python_minor)
    );
    let newest = compatibility()
        .newest_torch_xla_for_python(&env.python_minor)
        .unwrap();
    assert_eq!(
        finding.fixes[0].commands,
        vec![format!(
            "{} -m pip install 'torch=={}' 'torch_xla[tpu]=={}'",
            env.python_text(),
            newest.torch,
            newest.version
        )]
    );
    assert_eq!(
        finding.fixes[1].commands,
        vec![
            "python3.8 -m venv .venv-tpu".to_string(),
            ".venv-tpu/bin/python -m pip install 'torch==2.0.0' 'torch_xla[tpu]==2.0'".to_string(),
        ]
    );
}

#[test]
fn environment_variables_and_two_backends() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    install_torch_xla(&env, "2.8.0", TORCH_XLA_BODY);
    install_libtpu(&env, "0.0.40");
    install_google_torch_tpu(&env, "0.1.1", &["Requires-Dist: libtpu>=0.0.38"], "");
    let mut options = env.options();
    options.env_overrides = vec![
        ("PJRT_DEVICE".to_string(), Some("CPU".to_string())),
        ("XLA_USE_BF16".to_string(), Some("1".to_string())),
        (
            "TORCH_DEVICE_BACKEND_AUTOLOAD".to_string(),
            Some("0".to_string()),
        ),
    ];
    let report = tpulint_doctor::run(&options);
    for id in [
        "pjrt-device-not-tpu",
        "xla-bf16-env-deprecated",
        "torch-tpu-autoload-disabled",
        "two-tpu-backends",
        "torch-tpu-torch-too-old",
    ] {
        assert!(
            report.finding(id).is_some(),
            "{id} missing from {:?}",
            ids(&report)
        );
    }
    assert_eq!(
        report.environment.get("XLA_USE_BF16").map(String::as_str),
        Some("1")
    );
    assert_eq!(
        all_commands(&report, "xla-bf16-env-deprecated"),
        vec!["unset XLA_USE_BF16"]
    );
    assert_eq!(
        report.finding("pjrt-device-not-tpu").unwrap().title,
        "PJRT_DEVICE=CPU: torch_xla will not use the TPU"
    );
}

/// A Jupyter kernel holding the TPU: named as one, with its user, and the fix is to shut the
/// kernel down; libtpu's lock file is then not stale.
#[test]
fn a_jupyter_kernel_holding_the_tpu() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    install_torch_xla(&env, "2.8.0", TORCH_XLA_BODY);
    install_libtpu(&env, "0.0.21");
    let device = env.system.dev.join("accel0");
    let uid = current_uid();
    fs::write(
        env.system.etc.join("passwd"),
        format!(
            "daemon:x:{}:1::/:/bin/false\nnotebook-user:x:{uid}:{uid}::/home/n:/bin/sh\n",
            uid + 1
        ),
    )
    .unwrap();
    let (report, pid) = run_while_held(
        &env,
        "exec 3<\"$1\"; exec -a 'python3 -m ipykernel_launcher -f /home/n/.local/share/jupyter/runtime/kernel-1.json' sleep 60",
        &[&device],
        // The exec'd command line (`argv[0]`, NUL, `60`), not bash's script text.
        Some("kernel-1.json\u{0}60"),
    );
    let finding = report.finding("tpu-device-busy").expect("kernel found");
    assert_eq!(
        finding.title,
        format!(
            "{} is held by Jupyter kernel process {pid}",
            device.display()
        )
    );
    assert!(
        finding.detail.starts_with(&format!(
            "pid {pid} (user notebook-user, a Jupyter kernel): python3 -m ipykernel_launcher"
        )),
        "{}",
        finding.detail
    );
    assert!(finding.fixes[0].description.contains("Kernel → Shut Down"));
    assert_eq!(finding.fixes[0].commands, vec![format!("kill {pid}")]);
    assert!(report.finding("stale-libtpu-lockfile").is_none());
    let holder_fact = &report.devices.holders[0];
    assert!(holder_fact.jupyter_kernel);
    assert_eq!(holder_fact.user.as_deref(), Some("notebook-user"));
}

fn current_uid() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find(|line| line.starts_with("Uid:"))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|uid| uid.parse().ok())
        .unwrap()
}

/// `--python v/bin/python` is relative to where tpulint runs, although the probe runs from `/`.
#[test]
fn a_relative_interpreter_path_is_checked() {
    let env = TestEnv::new();
    install_torch(&env, "2.8.0");
    let cwd = std::env::current_dir().unwrap();
    let mut relative = std::path::PathBuf::new();
    for _ in cwd.components().skip(1) {
        relative.push("..");
    }
    relative.push(env.python.strip_prefix("/").unwrap());
    let mut options = env.options();
    options.python = Some(relative);
    let report = tpulint_doctor::run(&options);
    assert_eq!(
        ids(&report),
        vec!["no-tpu-backend"],
        "{:#?}",
        report.findings
    );
    assert!(report.interpreter.as_ref().unwrap().path.starts_with('/'));
}

/// Runs the doctor (with the real `/proc` and a libtpu lock file) while a `bash -c script` child
/// holds `nodes` open; returns the report and the holder's pid.
fn run_while_held(
    env: &TestEnv,
    script: &str,
    nodes: &[&std::path::Path],
    needle: Option<&str>,
) -> (tpulint_doctor::Report, u32) {
    let mut holder = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg("bash")
        .args(nodes)
        .stdin(Stdio::null())
        .spawn()
        .expect("holder starts");
    let pid = holder.id();
    wait_until_open(pid, nodes[0], needle);
    let mut options = env.options();
    options.system.proc = "/proc".into();
    fs::write(options.system.tmp.join("libtpu_lockfile"), "").unwrap();
    let report = tpulint_doctor::run(&options);
    let _ = holder.kill();
    let _ = holder.wait();
    (report, pid)
}
