//! The 2026 environments of issue 17 on real virtual environments with fake distributions:
//! TorchTPU nightlies against the installed torch (the `deleteNode` import failure), the `0.0.0`
//! stub, release-branch builds, libtpu releases with known problems, torch_xla 2.9 with a bumped
//! libtpu, Python versions per backend, TorchTPU's distributed prerequisites and the environment
//! variables each backend reads.

mod support;

use support::{
    TestEnv, all_commands, ids, install_google_torch_tpu, install_libtpu, install_torch,
    problem_ids,
};
use tpulint_doctor::compat::compatibility;
use tpulint_doctor::report::Origin;
use tpulint_doctor::{OutputFormat, Severity, Verdict, render};

/// The undefined symbol a TorchTPU nightly fails with in another torch than it was built for.
const DELETE_NODE: &str = "_ZN5torch8autograd10deleteNodeEPNS0_4NodeE";

/// Google's TorchTPU as its wheel installs it (unpinned torch, libtpu, `_internal`), with `body`
/// as `torch_tpu/__init__.py`.
fn install_torch_tpu(env: &TestEnv, version: &str, body: &str) {
    install_google_torch_tpu(
        env,
        version,
        &[
            "Summary: PyTorch backend for Google TPUs",
            "Requires-Dist: torch>=2.10.0",
            "Requires-Dist: libtpu>=0.0.38",
        ],
        &format!("__version__ = {version:?}\nimport torch\n{body}\n"),
    );
}

fn pairing_command(python: &str, torch: &str) -> String {
    format!(
        "{python} -m pip install --pre --index-url \"{}\" 'torch=={torch}' 'torch_tpu=={}' 'libtpu=={}'",
        compatibility().torch_tpu.index_url,
        "0.1.2.dev20261006000518",
        "0.0.47"
    )
}

/// torch 2.13.0, libtpu 0.0.47 and the torch_tpu nightly validated with them.
fn validated_torch_tpu_env() -> TestEnv {
    let env = TestEnv::new();
    install_torch(&env, "2.13.0");
    install_libtpu(&env, "0.0.47");
    install_torch_tpu(&env, "0.1.2.dev20261006000518", "");
    env
}

/// Options for a TorchTPU environment: no torch_xla variable set.
fn torch_tpu_options(env: &TestEnv) -> tpulint_doctor::DoctorOptions {
    let mut options = env.options();
    options.env_overrides[0].1 = None; // PJRT_DEVICE
    options
}

fn run_torch_tpu(env: &TestEnv) -> tpulint_doctor::Report {
    tpulint_doctor::run(&torch_tpu_options(env))
}

const TORCH_TPU_PYTHONS: [&str; 4] = ["3.11", "3.12", "3.13", "3.14"];

/// The environment: torch 2.13.0, a torch_tpu 0.1.2 nightly and libtpu 0.0.47, where
/// `import torch_tpu` fails with the undefined `deleteNode` symbol.
#[test]
fn a_nightly_built_for_another_torch_is_explained_and_repaired() {
    let env = TestEnv::new();
    install_torch(&env, "2.13.0+cpu");
    install_libtpu(&env, "0.0.47");
    install_torch_tpu(
        &env,
        "0.1.2.dev20261020093000",
        &format!(
            "raise ImportError('{}/torch_tpu/_C.cpython-312-x86_64-linux-gnu.so: undefined symbol: {DELETE_NODE}')",
            env.site_packages.display()
        ),
    );
    let report = run_torch_tpu(&env);
    // torch_tpu is installed: not "no backend".
    assert!(
        report.finding("no-tpu-backend").is_none(),
        "{:?}",
        ids(&report)
    );
    let origin = report
        .distributions
        .iter()
        .find(|d| d.name == "torch_tpu")
        .and_then(|d| d.origin);
    assert_eq!(origin, Some(Origin::Google));
    assert_eq!(
        problem_ids(&report),
        vec!["torch-tpu-torch-mismatch"],
        "{:#?}",
        report.findings
    );
    let finding = report.finding("torch-tpu-torch-mismatch").unwrap();
    assert_eq!(finding.severity, Severity::Error);
    assert_eq!(
        finding.title,
        "torch 2.13.0+cpu is not the torch torch_tpu 0.1.2.dev20261020093000 was built against"
    );
    assert!(finding.detail.contains(DELETE_NODE), "{}", finding.detail);
    assert!(
        finding
            .detail
            .contains("torch_tpu 0.1.2.dev20261020093000 (nightly of 20261020)"),
        "{}",
        finding.detail
    );
    assert!(finding.why.contains("torch>=2.10.0"), "{}", finding.why);
    // The repair for this interpreter: the nightly validated with torch 2.13, pinned together.
    let python = env.python_text();
    assert_eq!(
        all_commands(&report, "torch-tpu-torch-mismatch"),
        vec![
            pairing_command(&python, "2.13.0"),
            format!(
                "{python} -c 'import torch, torch_tpu; print(torch.__version__, torch_tpu.__version__)'"
            ),
        ]
    );
    // The failure is explained once, not as a bare import failure too.
    assert!(report.finding("import-failed").is_none());
    let fact = report
        .imports
        .iter()
        .find(|f| f.module == "torch_tpu")
        .unwrap();
    assert_eq!(fact.status, "failed");
    // TorchTPU supports Python 3.11-3.14: no "use Python 3.12" advice on those.
    assert_eq!(
        report.finding("torch-tpu-python-version").is_some(),
        !TORCH_TPU_PYTHONS.contains(&env.python_minor.as_str())
    );
    // Nothing speaks in torch_xla's terms.
    let text = render(&report, OutputFormat::Text { color: false });
    assert!(!text.contains("PJRT_DEVICE"), "{text}");
    assert!(
        text.contains("torch_tpu 0.1.2.dev20261020093000 (Google TorchTPU, nightly of 20261020)"),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&render(&report, OutputFormat::Json)).unwrap();
    let torch_tpu = json["distributions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "torch_tpu")
        .unwrap()
        .clone();
    assert_eq!(torch_tpu["build"]["kind"], "nightly");
    assert_eq!(torch_tpu["build"]["date"], "20261020");
    assert_eq!(report.verdict, Verdict::NotReady);
}

/// A July 2026 nightly (built against torch 2.11) next to torch 2.13 that still imports: the table
/// predicts the mismatch, as a warning, and the first fix is the torch it was built against.
#[test]
fn a_nightly_whose_build_torch_is_known() {
    let env = TestEnv::new();
    install_torch(&env, "2.13.0");
    install_libtpu(&env, "0.0.46");
    install_torch_tpu(&env, "0.1.1.dev20260715093000", "");
    let report = run_torch_tpu(&env);
    let finding = report
        .finding("torch-tpu-torch-mismatch")
        .expect("predicted");
    assert_eq!(finding.severity, Severity::Warning);
    assert!(
        finding.detail.contains("built against torch 2.11"),
        "{}",
        finding.detail
    );
    let python = env.python_text();
    assert_eq!(
        finding.fixes[0].commands,
        vec![format!(
            "{python} -m pip install 'torch~=2.11.0' --index-url https://download.pytorch.org/whl/cpu"
        )]
    );
    assert_eq!(
        finding.fixes[1].commands,
        vec![pairing_command(&python, "2.13.0")]
    );
    assert!(
        finding.sources.iter().any(|s| s.contains("Jul 2026")),
        "{:?}",
        finding.sources
    );

    // The same nightly with the torch it was built for: nothing to say.
    env.remove_dist("torch");
    install_torch(&env, "2.11.0");
    let report = run_torch_tpu(&env);
    assert!(
        report.finding("torch-tpu-torch-mismatch").is_none(),
        "{:?}",
        ids(&report)
    );
}

/// An unpinned download resolves torch_tpu 0.0.0, a stub without a backend.
#[test]
fn the_0_0_0_stub_is_a_broken_install() {
    let env = TestEnv::new();
    install_torch(&env, "2.13.0");
    env.add_dist("torch_tpu", "0.0.0", &["Summary: placeholder"], &[]);
    let report = run_torch_tpu(&env);
    assert_eq!(
        problem_ids(&report),
        vec!["torch-tpu-stub"],
        "{:#?}",
        report.findings
    );
    let finding = report.finding("torch-tpu-stub").unwrap();
    assert_eq!(
        finding.title,
        "torch_tpu 0.0.0 is a placeholder, not TorchTPU"
    );
    let python = env.python_text();
    assert_eq!(
        finding.fixes[0].commands,
        vec![
            format!("{python} -m pip uninstall -y torch_tpu"),
            pairing_command(&python, "2.13.0"),
        ]
    );
    let build = report
        .distributions
        .iter()
        .find(|d| d.name == "torch_tpu")
        .unwrap();
    assert_eq!(
        build.build,
        Some(tpulint_doctor::compat::TorchTpuBuild::Stub)
    );
}

/// A release-branch build is recognised; with a libtpu that has a known TorchTPU problem the fix
/// is the validated libtpu.
#[test]
fn release_branch_builds_and_libtpu_with_known_problems() {
    let env = TestEnv::new();
    install_torch(&env, "2.13.0");
    install_libtpu(&env, "0.0.47");
    install_torch_tpu(&env, "0.1.1+release.2026.9.22.20260927223741", "");
    let report = run_torch_tpu(&env);
    assert_eq!(
        problem_ids(&report),
        Vec::<&str>::new(),
        "{:#?}",
        report.findings
    );
    assert_eq!(report.verdict, Verdict::Ready);
    let text = render(&report, OutputFormat::Text { color: false });
    assert!(
        text.contains("(Google TorchTPU, release branch 2026.9.22)"),
        "{text}"
    );

    env.remove_dist("libtpu");
    install_libtpu(&env, "0.0.40");
    let report = run_torch_tpu(&env);
    assert_eq!(problem_ids(&report), vec!["libtpu-known-problem"]);
    let finding = report.finding("libtpu-known-problem").unwrap();
    assert!(
        finding.detail.contains("known issue with libtpu 0.0.40"),
        "{}",
        finding.detail
    );
    assert!(
        finding
            .sources
            .iter()
            .any(|s| s.contains("helion PR #3003"))
    );
    assert_eq!(
        finding.fixes[0].commands,
        vec![format!(
            "{} -m pip install 'libtpu==0.0.47'",
            env.python_text()
        )]
    );
    assert_eq!(report.verdict, Verdict::Degraded);
}

/// torch_xla 2.9.0 pins libtpu 0.0.21; bumping libtpu alone is a hard break.
#[test]
fn torch_xla_2_9_with_a_bumped_libtpu() {
    let env = TestEnv::new();
    install_torch(&env, "2.9.0");
    env.add_package("torch_xla", "2.9.0", &[], "import torch");
    install_libtpu(&env, "0.0.46");
    let report = env.run();
    assert_eq!(
        problem_ids(&report),
        vec!["torch-xla-libtpu-mismatch"],
        "{:#?}",
        report.findings
    );
    let finding = &report.findings[0];
    assert_eq!(
        finding.title,
        "libtpu 0.0.46 is not the libtpu torch_xla 2.9.0 pins (0.0.21)"
    );
    assert!(finding.why.contains("Unexpected PJRT_ExecuteOptions size"));
    assert_eq!(
        finding.fixes[0].commands,
        vec![format!(
            "{} -m pip install 'libtpu==0.0.21'",
            env.python_text()
        )]
    );
    // PyTorch/XLA is frozen at 2.9: said once, as information.
    let frozen = report.finding("torch-xla-frozen").expect("frozen note");
    assert_eq!(frozen.severity, Severity::Info);
    assert_eq!(
        frozen.title,
        "PyTorch/XLA is frozen at 2.9.0; TorchTPU replaces it"
    );

    env.remove_dist("libtpu");
    install_libtpu(&env, "0.0.21");
    let report = env.run();
    assert_eq!(
        problem_ids(&report),
        Vec::<&str>::new(),
        "{:?}",
        ids(&report)
    );
}

/// Python per backend: vLLM-TorchTPU needs 3.12 exactly (TorchTPU itself 3.11-3.14).
#[test]
fn vllm_torchtpu_needs_python_3_12() {
    let env = validated_torch_tpu_env();
    env.add_package("vllm-torchtpu", "0.1.0", &[], "");
    let report = run_torch_tpu(&env);
    if env.python_minor == "3.12" {
        assert!(report.finding("vllm-torchtpu-python").is_none());
        return;
    }
    let finding = report
        .finding("vllm-torchtpu-python")
        .expect("wrong Python");
    assert_eq!(
        finding.title,
        format!(
            "vllm-torchtpu needs Python 3.12, this is Python {}",
            env.python_minor
        )
    );
    assert_eq!(
        finding.fixes[0].commands,
        vec![
            "python3.12 -m venv .venv-vllm".to_string(),
            format!(
                ".venv-vllm/bin/python -m pip install --pre --index-url \"{}\" vllm-torchtpu",
                compatibility().torch_tpu.index_url
            ),
        ]
    );
    assert_eq!(
        report.finding("torch-tpu-python-version").is_some(),
        !TORCH_TPU_PYTHONS.contains(&env.python_minor.as_str())
    );
}

/// A distributed launch configured in the shell must give TorchTPU its slice variables.
#[test]
fn torch_tpu_distributed_prerequisites() {
    let env = validated_torch_tpu_env();
    let mut options = torch_tpu_options(&env);
    options.env_overrides.extend([
        ("WORLD_SIZE".to_string(), Some("4".to_string())),
        (
            "TORCH_TPU_SLICEBUILDER_ADDRESSES".to_string(),
            Some("localhost:8471,localhost:8472".to_string()),
        ),
    ]);
    let report = tpulint_doctor::run(&options);
    let finding = report
        .finding("torch-tpu-distributed-env")
        .expect("incomplete launch");
    assert_eq!(
        finding.title,
        "The TorchTPU multi-process launch is not fully configured: TORCH_TPU_SLICEBUILDER_ADDRESSES lists 2 addresses for WORLD_SIZE=4; TORCH_TPU_TOPOLOGY is not set"
    );
    assert_eq!(
        finding.fixes[0].commands,
        vec![
            format!(
                "eval $({} -m torch_tpu._internal.distributed.launchers.singlehost_wrapper | sed 's/^/export /')",
                env.python_text()
            ),
            "torchrun --nproc_per_node=$WORLD_SIZE your_script.py".to_string(),
        ]
    );

    // Inside a torchrun worker, torchrun's own variables are needed too.
    options.env_overrides.extend([
        (
            "TORCH_TPU_SLICEBUILDER_ADDRESSES".to_string(),
            Some("localhost:8471,localhost:8472,localhost:8473,localhost:8474".to_string()),
        ),
        ("TORCH_TPU_TOPOLOGY".to_string(), Some("2,2,1".to_string())),
        ("RANK".to_string(), Some("0".to_string())),
    ]);
    let report = tpulint_doctor::run(&options);
    let finding = report
        .finding("torch-tpu-distributed-env")
        .expect("torchrun variables");
    assert!(
        finding
            .title
            .ends_with("LOCAL_RANK, GROUP_RANK, MASTER_ADDR, MASTER_PORT not set"),
        "{}",
        finding.title
    );

    // Complete: nothing to fix, but the variables only act at backend initialisation.
    options.env_overrides.extend(
        ["LOCAL_RANK", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT"]
            .map(|name| (name.to_string(), Some("0".to_string()))),
    );
    let report = tpulint_doctor::run(&options);
    assert!(
        report.finding("torch-tpu-distributed-env").is_none(),
        "{:?}",
        ids(&report)
    );
    let note = report
        .finding("env-read-at-backend-init")
        .expect("locked at init");
    assert_eq!(note.severity, Severity::Info);
    assert_eq!(
        note.title,
        "TORCH_TPU_SLICEBUILDER_ADDRESSES, TORCH_TPU_TOPOLOGY: read only when TorchTPU initialises"
    );
    assert!(
        note.detail.contains("during `import torch` (autoload)"),
        "{}",
        note.detail
    );
}

/// torch_xla's variables do nothing for TorchTPU (and the reverse); the findings name the
/// backend that is actually installed.
#[test]
fn variables_for_the_backend_that_is_not_installed() {
    let env = validated_torch_tpu_env();
    let mut options = torch_tpu_options(&env);
    options.env_overrides.extend([
        ("PJRT_DEVICE".to_string(), Some("TPU".to_string())),
        ("XLA_USE_BF16".to_string(), Some("1".to_string())),
        ("TPU_DEFER_AND_FUSE".to_string(), Some("1".to_string())),
    ]);
    let report = tpulint_doctor::run(&options);
    // PJRT_DEVICE=TPU (set by the test options) and XLA_USE_BF16 are torch_xla's.
    let finding = report
        .finding("env-for-other-backend")
        .expect("torch_xla variables");
    assert_eq!(
        finding.title,
        "PJRT_DEVICE XLA_USE_BF16: read only by torch_xla, which is not installed"
    );
    assert!(finding.why.contains("(TorchTPU)"), "{}", finding.why);
    assert_eq!(
        finding.fixes[0].commands,
        vec!["unset PJRT_DEVICE XLA_USE_BF16"]
    );
    assert!(report.finding("pjrt-device-unset").is_none());
    assert!(report.finding("xla-bf16-env-deprecated").is_none());
    let note = report
        .finding("env-read-at-backend-init")
        .expect("TPU_DEFER_AND_FUSE");
    assert!(
        note.title.starts_with("TPU_DEFER_AND_FUSE: read only when"),
        "{}",
        note.title
    );

    // The reverse: TorchTPU's execution mode with torch_xla.
    let env = TestEnv::new();
    install_torch(&env, "2.9.0");
    env.add_package("torch_xla", "2.9.0", &[], "import torch");
    install_libtpu(&env, "0.0.21");
    env.add_package("transformers", "5.1.0", &[], "");
    let mut options = env.options();
    options
        .env_overrides
        .push(("TPU_DEFER_AND_FUSE".to_string(), Some("1".to_string())));
    let report = tpulint_doctor::run(&options);
    let finding = report
        .finding("env-for-other-backend")
        .expect("TorchTPU variable");
    assert_eq!(
        finding.title,
        "TPU_DEFER_AND_FUSE: read only by TorchTPU, which is not installed"
    );
    // transformers' is_torch_tpu_available now means TorchTPU.
    let gate = report.finding("transformers-tpu-gate").expect("gate note");
    assert_eq!(gate.severity, Severity::Info);
    assert!(gate.why.contains("is_torch_xla_available()"));
}

/// A TorchTPU environment on a machine without a TPU: the device finding speaks of TorchTPU.
#[test]
fn the_missing_device_is_explained_for_torch_tpu() {
    let env = validated_torch_tpu_env();
    std::fs::remove_file(env.system.dev.join("accel0")).unwrap();
    let report = run_torch_tpu(&env);
    assert_eq!(
        problem_ids(&report),
        vec!["no-tpu-device"],
        "{:#?}",
        report.findings
    );
    let detail = &report.findings[0].detail;
    assert!(
        detail.contains("TorchTPU has no \"tpu\" device"),
        "{detail}"
    );
    assert!(!detail.contains("torch_xla"), "{detail}");
}

/// A `torch_tpu` that is neither recognisably Google's nor Sophgo's is reported as such (and is
/// not "no backend"); an old libtpu under TorchTPU gets the validated one.
#[test]
fn unknown_torch_tpu_and_an_old_libtpu() {
    let env = TestEnv::new();
    install_torch(&env, "2.13.0");
    install_libtpu(&env, "0.0.30");
    env.add_package("torch_tpu", "0.1.1", &[], "");
    let report = run_torch_tpu(&env);
    assert_eq!(
        problem_ids(&report),
        vec!["torch-tpu-unknown-origin"],
        "{:#?}",
        report.findings
    );
    assert_eq!(
        all_commands(&report, "torch-tpu-unknown-origin"),
        vec![format!("{} -m pip show -f torch_tpu", env.python_text())]
    );

    env.remove_dist("torch_tpu");
    install_torch_tpu(&env, "0.1.2.dev20261006000518", "");
    let report = run_torch_tpu(&env);
    assert_eq!(
        problem_ids(&report),
        vec!["torch-tpu-libtpu-too-old"],
        "{:#?}",
        report.findings
    );
    let finding = &report.findings[0];
    assert_eq!(
        finding.title,
        "libtpu 0.0.30 is older than TorchTPU requires (0.0.38)"
    );
    assert_eq!(
        finding.fixes[0].commands,
        vec![format!(
            "{} -m pip install 'libtpu==0.0.47'",
            env.python_text()
        )]
    );
}

/// tpu-sync-torch is ABI-locked to the torch_tpu it was built for.
#[test]
fn tpu_sync_torch_built_for_another_torch_tpu() {
    let env = TestEnv::new();
    install_torch(&env, "2.13.0");
    install_libtpu(&env, "0.0.46");
    install_torch_tpu(&env, "0.1.1.dev20260824100827", "");
    env.add_package("tpu-sync-torch", "0.0.1.dev20261006025601", &[], "");
    let report = run_torch_tpu(&env);
    let finding = report
        .finding("tpu-sync-torch-mismatch")
        .expect("mismatched pair");
    assert_eq!(
        finding.title,
        "tpu-sync-torch 0.0.1.dev20261006025601 was not built for torch_tpu 0.1.1.dev20260824100827"
    );
    assert_eq!(
        finding.fixes[0].commands,
        vec![pairing_command(&env.python_text(), "2.13.0")]
    );

    // The recorded pair: nothing to say.
    let env = validated_torch_tpu_env();
    env.add_package("tpu-sync-torch", "0.0.1.dev20261006025601", &[], "");
    let report = run_torch_tpu(&env);
    assert_eq!(
        problem_ids(&report),
        Vec::<&str>::new(),
        "{:#?}",
        report.findings
    );
}
