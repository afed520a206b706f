//! Interpreter discovery order: `--python`, `$VIRTUAL_ENV`, `.venv`/`venv` walking up from the
//! project, `python3` on `PATH`; broken candidates are reported, not crashed on.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tpulint_doctor::discover::{
    DiscoveryInputs, DiscoveryProblem, Interpreter, InterpreterSource, discover,
};

fn fake_python(path: &Path) -> PathBuf {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, "#!/bin/sh\n").unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    path.to_path_buf()
}

fn found(path: &Path, source: InterpreterSource) -> Result<Interpreter, DiscoveryProblem> {
    Ok(Interpreter {
        path: path.to_path_buf(),
        source,
    })
}

#[test]
fn discovery_follows_the_documented_order() {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("project/src/pkg");
    fs::create_dir_all(&project).unwrap();
    let explicit = fake_python(&root.path().join("explicit/bin/python"));
    let active = fake_python(&root.path().join("active/bin/python"));
    let project_venv = fake_python(&root.path().join("project/.venv/bin/python"));
    let on_path = fake_python(&root.path().join("usr/bin/python3"));
    let path_var = OsString::from(format!(
        "/nonexistent:{}",
        root.path().join("usr/bin").display()
    ));
    let mut inputs = DiscoveryInputs {
        explicit: Some(&explicit),
        virtual_env: Some(&root.path().join("active")),
        project_dir: Some(&project),
        path_var: Some(&path_var),
    };
    assert_eq!(
        discover(&inputs).result,
        found(&explicit, InterpreterSource::Flag)
    );
    inputs.explicit = None;
    assert_eq!(
        discover(&inputs).result,
        found(&active, InterpreterSource::VirtualEnv)
    );
    inputs.virtual_env = None;
    assert_eq!(
        discover(&inputs).result,
        found(&project_venv, InterpreterSource::ProjectVenv)
    );
    fs::remove_dir_all(root.path().join("project/.venv")).unwrap();
    assert_eq!(
        discover(&inputs).result,
        found(&on_path, InterpreterSource::Path)
    );
    inputs.path_var = None;
    assert_eq!(discover(&inputs).result, Err(DiscoveryProblem::NoneFound));
}

#[test]
fn a_venv_directory_is_accepted_for_python_and_stale_virtual_env_is_reported() {
    let root = tempfile::tempdir().unwrap();
    let venv_python = fake_python(&root.path().join("env/bin/python"));
    let env_dir = root.path().join("env");
    let inputs = DiscoveryInputs {
        explicit: Some(&env_dir),
        ..DiscoveryInputs::default()
    };
    assert_eq!(
        discover(&inputs).result,
        found(&venv_python, InterpreterSource::Flag)
    );

    let stale = root.path().join("deleted-env");
    let path_var = OsString::from(root.path().join("env/bin"));
    fake_python(&root.path().join("env/bin/python3"));
    let discovery = discover(&DiscoveryInputs {
        explicit: None,
        virtual_env: Some(&stale),
        project_dir: None,
        path_var: Some(&path_var),
    });
    assert_eq!(discovery.stale_virtual_env, Some(stale));
    assert_eq!(
        discovery.result,
        found(
            &root.path().join("env/bin/python3"),
            InterpreterSource::Path
        )
    );
}

#[test]
fn explicit_problems_do_not_fall_back() {
    let root = tempfile::tempdir().unwrap();
    let missing = root.path().join("missing/python");
    let discovery = discover(&DiscoveryInputs {
        explicit: Some(&missing),
        ..DiscoveryInputs::default()
    });
    assert_eq!(
        discovery.result,
        Err(DiscoveryProblem::Missing {
            path: missing,
            source: InterpreterSource::Flag
        })
    );
    let not_executable = root.path().join("python");
    fs::write(&not_executable, "").unwrap();
    fs::set_permissions(&not_executable, fs::Permissions::from_mode(0o644)).unwrap();
    let discovery = discover(&DiscoveryInputs {
        explicit: Some(&not_executable),
        ..DiscoveryInputs::default()
    });
    assert_eq!(
        discovery.result,
        Err(DiscoveryProblem::NotExecutable {
            path: not_executable,
            source: InterpreterSource::Flag
        })
    );
}
