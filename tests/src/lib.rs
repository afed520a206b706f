//! Test harness: runs one rule over a fixture, renders the snapshot text, and checks the fix
//! invariants (fixes converge, introduce no syntax errors, match the rule's declared availability).

pub mod docs;

use std::path::{Path, PathBuf};

use tpulint_analyzer::{
    Applicability, BackendSetting, FixAvailability, LibraryCodePolicy, Settings, check_source,
    fix_source, rule_by_code_or_name,
};
use tpulint_report::SourceFile;
use tpulint_report::text::{TextOptions, render_text};

/// The repository root (the parent of `tests/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Every fixture under `tests/fixtures/`, sorted.
pub fn fixture_paths() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    collect_py(&repo_root().join("tests/fixtures"), &mut paths);
    paths.sort();
    paths
}

fn collect_py(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_py(&path, out);
        } else if path.extension().is_some_and(|e| e == "py") {
            out.push(path);
        }
    }
}

/// `TPU101` for `fixtures/host_sync/TPU101.py` or `TPU101_torch_xla.py`.
pub fn fixture_code(path: &Path) -> String {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    stem.split('_').next().unwrap_or(stem).to_string()
}

/// Settings for a fixture: only its rule, plus options from a
/// `# fixture: backend=… also=TPU101 torch-xla-version=2.5` line.
pub fn fixture_settings(path: &Path, source: &str) -> Settings {
    let code = fixture_code(path);
    let id = rule_by_code_or_name(&code)
        .unwrap_or_else(|| panic!("fixture {} names no rule", path.display()));
    let mut settings = Settings::only(id);
    // A fixture exercises its rule's own logic, including what it demotes to information off
    // hot paths; the checker's policy for library modules is tested on its own
    // (`library_code_policy` in the analyzer's checker tests), and `library-code=hot-paths`
    // asks for it here.
    settings.library_code = LibraryCodePolicy::All;
    for line in source.lines().take(5) {
        if let Some(options) = line.strip_prefix("# fixture:") {
            for option in options.split_whitespace() {
                if let Some(codes) = option.strip_prefix("also=") {
                    for code in codes.split(',') {
                        let also = rule_by_code_or_name(code)
                            .unwrap_or_else(|| panic!("unknown code {code} in {}", path.display()));
                        settings.rules.set(also, true);
                    }
                }
                if let Some(policy) = option.strip_prefix("library-code=") {
                    settings.library_code = LibraryCodePolicy::parse(policy)
                        .unwrap_or_else(|| panic!("bad library-code in {}", path.display()));
                }
                if let Some(backend) = option.strip_prefix("backend=") {
                    settings.backend = BackendSetting::parse(backend)
                        .unwrap_or_else(|| panic!("bad backend in {}", path.display()));
                }
                if let Some(version) = option.strip_prefix("torch-xla-version=") {
                    settings.torch_xla_version = Some(
                        tpulint_analyzer::TorchXlaVersion::parse(version)
                            .unwrap_or_else(|| panic!("bad version in {}", path.display())),
                    );
                }
            }
        }
    }
    settings
}

/// Runs the fixture's rule, checks the harness invariants, and returns the snapshot text.
pub fn run_fixture(path: &Path) -> String {
    let source = std::fs::read_to_string(path).expect("fixture is readable UTF-8");
    let settings = fixture_settings(path, &source);
    let code = fixture_code(path);
    let rule = rule_by_code_or_name(&code)
        .expect("fixture names a rule")
        .meta();
    let diagnostics = check_source(&source, &settings);

    for diagnostic in &diagnostics {
        assert!(
            !diagnostic.message.contains('\n'),
            "{code}: message spans lines: {}",
            diagnostic.message
        );
        match (rule.fix, &diagnostic.fix) {
            (FixAvailability::None, Some(_)) => {
                panic!("{code} is declared never fixable but offered a fix")
            }
            (FixAvailability::Always, None) => {
                panic!("{code} is declared always fixable but offered no fix")
            }
            (_, Some(fix)) => {
                assert!(!fix.title.trim().is_empty(), "{code}: fix without a title");
                assert!(!fix.edits.is_empty(), "{code}: fix without edits");
            }
            _ => {}
        }
    }

    // Fixes converge and never introduce syntax errors.
    let outcome = fix_source(&source, &settings, Applicability::Unsafe);
    assert!(
        outcome.converged,
        "{code}: fixes did not converge in {}",
        path.display()
    );
    assert!(
        !outcome.rejected_syntax_error,
        "{code}: a fix introduced a syntax error in {}",
        path.display()
    );

    let name = path
        .strip_prefix(repo_root().join("tests/fixtures"))
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/");
    let file = SourceFile::new(name, source.clone(), diagnostics);
    let mut snapshot = String::new();
    for diagnostic in &file.diagnostics {
        snapshot.push_str(&render_text(
            &file,
            diagnostic,
            TextOptions {
                show_fix_diff: true,
                ..TextOptions::default()
            },
        ));
        snapshot.push('\n');
    }
    if file.diagnostics.is_empty() {
        snapshot.push_str("(no diagnostics)\n");
    }
    snapshot
}
