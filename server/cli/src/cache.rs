//! The content cache of `tpulint check`: a file whose text, settings and tpulint build are
//! unchanged since the last run is not parsed or checked again; its diagnostics are read back.
//!
//! Like ruff's cache, it lives at the project root (`.tpulint_cache/`, or `--cache-dir` /
//! `TPULINT_CACHE_DIR`, or the `cache-dir` setting), is bypassed with `--no-cache`, and carries a
//! `.gitignore` of `*`.
//! An entry is one file named by a 64-bit hash of (content, settings, build); it also stores a
//! second, independently seeded hash of the same inputs, which a read must match, so a
//! collision of the file name is never taken for a hit. Entries are written to a temporary file
//! and renamed into place, so concurrent runs never read a half-written entry; an entry that
//! cannot be read or decoded is a miss. Only checking uses the cache: fixing always recomputes.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Value, json};
use tpulint_analyzer::syntax_errors::INVALID_SYNTAX;
use tpulint_analyzer::{
    Applicability, Diagnostic, DiagnosticTag, Edit, Fix, Related, Settings, Severity,
    rule_by_code_or_name, rules,
};
use tpulint_workspace::Project;

/// The cache directory's name at a project root.
pub const DEFAULT_DIR: &str = ".tpulint_cache";
/// The layout version of the entries: bump it when their encoding changes.
const LAYOUT: &str = "v1";

/// Where the cache of files under a project root lives, or `None` when the cache is off.
#[derive(Debug, Clone)]
pub struct CacheLocation {
    /// Overrides the per-project directory (`--cache-dir`, `TPULINT_CACHE_DIR`).
    pub dir: Option<PathBuf>,
}

impl CacheLocation {
    /// The entries' directory for a file of `project`: `--cache-dir` / `TPULINT_CACHE_DIR`, else
    /// the configuration's `cache-dir` (relative to the project root), else `.tpulint_cache` at
    /// the root.
    pub fn entries(&self, project: &Project) -> PathBuf {
        let configured = project
            .configuration
            .cache_dir
            .as_ref()
            .map(|dir| project.root.join(dir));
        self.dir
            .clone()
            .or(configured)
            .unwrap_or_else(|| project.root.join(DEFAULT_DIR))
            .join(LAYOUT)
    }
}

/// What identifies this build of tpulint: its version and the executable's size and time, so
/// that a rebuilt binary with the same version never reads another build's results.
fn build_id() -> u64 {
    static ID: OnceLock<u64> = OnceLock::new();
    *ID.get_or_init(|| {
        let mut hasher = DefaultHasher::new();
        env!("CARGO_PKG_VERSION").hash(&mut hasher);
        if let Ok(metadata) = std::env::current_exe().and_then(std::fs::metadata) {
            metadata.len().hash(&mut hasher);
            if let Ok(modified) = metadata.modified() {
                modified.hash(&mut hasher);
            }
        }
        hasher.finish()
    })
}

/// The entry's name and its check hash, from independently seeded hashers.
fn keys(text: &str, settings: &Settings) -> (u64, u64) {
    let hash = |seed: u64| {
        let mut hasher = DefaultHasher::new();
        seed.hash(&mut hasher);
        build_id().hash(&mut hasher);
        settings.hash(&mut hasher);
        text.hash(&mut hasher);
        hasher.finish()
    };
    (hash(0x7470_756c_696e_7431), hash(0x6368_6563_6b5f_6b32))
}

/// Cached diagnostics of `text` under `settings`, if a valid entry exists.
pub fn get(entries: &Path, text: &str, settings: &Settings) -> Option<Vec<Diagnostic>> {
    let (name, check) = keys(text, settings);
    let data = std::fs::read_to_string(entries.join(format!("{name:016x}.json"))).ok()?;
    let value: Value = serde_json::from_str(&data).ok()?;
    if value.get("check")?.as_str()? != format!("{check:016x}") {
        return None;
    }
    value
        .get("diagnostics")?
        .as_array()?
        .iter()
        .map(decode)
        .collect()
}

/// Stores the diagnostics of `text`; failures are ignored (the cache is an optimisation).
pub fn put(entries: &Path, text: &str, settings: &Settings, diagnostics: &[Diagnostic]) {
    // Diagnostics this module cannot name again (none today) are not cached.
    if diagnostics.iter().any(|d| static_code(d.code).is_none()) {
        return;
    }
    let (name, check) = keys(text, settings);
    let entry = json!({
        "check": format!("{check:016x}"),
        "diagnostics": diagnostics.iter().map(encode).collect::<Vec<_>>(),
    });
    if ensure_directory(entries).is_err() {
        return;
    }
    let target = entries.join(format!("{name:016x}.json"));
    let temporary = entries.join(format!(
        ".{name:016x}.{}.{:?}.tmp",
        std::process::id(),
        std::thread::current().id()
    ));
    if std::fs::write(&temporary, entry.to_string()).is_ok()
        && std::fs::rename(&temporary, &target).is_err()
    {
        let _ = std::fs::remove_file(&temporary);
    }
}

/// Creates the entries' directory, with a `.gitignore` and a `CACHEDIR.TAG` at the cache root.
fn ensure_directory(entries: &Path) -> std::io::Result<()> {
    if entries.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(entries)?;
    if let Some(root) = entries.parent() {
        let _ = std::fs::write(root.join(".gitignore"), "# Created by tpulint\n*\n");
        let _ = std::fs::write(
            root.join("CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55\n# tpulint's cache: safe to delete\n",
        );
    }
    Ok(())
}

/// The `&'static str` for a diagnostic code: a rule's, or one of the codes no rule has.
fn static_code(code: &str) -> Option<(&'static str, &'static str)> {
    if code == INVALID_SYNTAX {
        return Some((INVALID_SYNTAX, INVALID_SYNTAX));
    }
    let rule = rules()[rule_by_code_or_name(code)?.0 as usize];
    (rule.code == code).then_some((rule.code, rule.name))
}

fn encode(diagnostic: &Diagnostic) -> Value {
    json!({
        "code": diagnostic.code,
        "message": diagnostic.message,
        "range": [diagnostic.range.start, diagnostic.range.end],
        "severity": diagnostic.severity.as_str(),
        "fix": diagnostic.fix.as_ref().map(|fix| json!({
            "applicability": match fix.applicability {
                Applicability::Safe => "safe",
                Applicability::Unsafe => "unsafe",
                Applicability::DisplayOnly => "display-only",
            },
            "title": fix.title,
            "edits": fix.edits.iter().map(|edit| json!([edit.range.start, edit.range.end, edit.content])).collect::<Vec<_>>(),
        })),
        "related": diagnostic.related.iter().map(|related| json!([related.range.start, related.range.end, related.message])).collect::<Vec<_>>(),
        "tag": diagnostic.tag.map(|tag| match tag {
            DiagnosticTag::Deprecated => "deprecated",
            DiagnosticTag::Unnecessary => "unnecessary",
        }),
    })
}

fn range(value: &Value) -> Option<std::ops::Range<usize>> {
    Some(value.get(0)?.as_u64()? as usize..value.get(1)?.as_u64()? as usize)
}

fn decode(value: &Value) -> Option<Diagnostic> {
    let (code, name) = static_code(value.get("code")?.as_str()?)?;
    let severity = match value.get("severity")?.as_str()? {
        "error" => Severity::Error,
        "warning" => Severity::Warning,
        "info" => Severity::Info,
        _ => return None,
    };
    let fix = match value.get("fix")? {
        Value::Null => None,
        fix => Some(Fix {
            applicability: match fix.get("applicability")?.as_str()? {
                "safe" => Applicability::Safe,
                "unsafe" => Applicability::Unsafe,
                "display-only" => Applicability::DisplayOnly,
                _ => return None,
            },
            title: fix.get("title")?.as_str()?.to_string(),
            edits: fix
                .get("edits")?
                .as_array()?
                .iter()
                .map(|edit| {
                    Some(Edit {
                        range: range(edit)?,
                        content: edit.get(2)?.as_str()?.to_string(),
                    })
                })
                .collect::<Option<Vec<_>>>()?,
        }),
    };
    let related = value
        .get("related")?
        .as_array()?
        .iter()
        .map(|related| {
            Some(Related {
                range: range(related)?,
                message: related.get(2)?.as_str()?.to_string(),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let tag = match value.get("tag")? {
        Value::Null => None,
        tag => Some(match tag.as_str()? {
            "deprecated" => DiagnosticTag::Deprecated,
            "unnecessary" => DiagnosticTag::Unnecessary,
            _ => return None,
        }),
    };
    Some(Diagnostic {
        code,
        name,
        message: value.get("message")?.as_str()?.to_string(),
        range: range(value.get("range")?)?,
        severity,
        fix,
        related,
        tag,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpulint_analyzer::check_source;

    const SOURCE: &str = "import torch\n\ndef train(loader, model, opt):\n    for x in loader:\n        loss = model(x)\n        print(loss.item())\n        x = x.cuda()\n";

    /// Caches `SOURCE`'s diagnostics under `settings`.
    fn fill(entries: &Path, settings: &Settings) {
        put(entries, SOURCE, settings, &check_source(SOURCE, settings));
    }

    #[test]
    fn an_entry_round_trips_every_field() {
        let directory = tempfile::tempdir().expect("tempdir");
        let settings = Settings::default();
        let diagnostics = check_source(SOURCE, &settings);
        assert!(
            diagnostics.iter().any(|d| d.fix.is_some()),
            "{diagnostics:?}"
        );
        put(directory.path(), SOURCE, &settings, &diagnostics);
        assert_eq!(get(directory.path(), SOURCE, &settings), Some(diagnostics));
    }

    #[test]
    fn other_text_or_settings_miss() {
        let directory = tempfile::tempdir().expect("tempdir");
        let settings = Settings::default();
        fill(directory.path(), &settings);
        assert_eq!(
            get(directory.path(), &format!("{SOURCE}\n"), &settings),
            None
        );
        let other = Settings {
            backend: tpulint_analyzer::BackendSetting::TorchXla,
            ..Settings::default()
        };
        assert_eq!(get(directory.path(), SOURCE, &other), None);
    }

    #[test]
    fn a_corrupt_or_foreign_entry_is_a_miss() {
        let directory = tempfile::tempdir().expect("tempdir");
        let settings = Settings::default();
        fill(directory.path(), &settings);
        let (name, _) = keys(SOURCE, &settings);
        let path = directory.path().join(format!("{name:016x}.json"));
        std::fs::write(
            &path,
            "{\"check\": \"0000000000000000\", \"diagnostics\": []}",
        )
        .unwrap();
        assert_eq!(get(directory.path(), SOURCE, &settings), None);
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(get(directory.path(), SOURCE, &settings), None);
    }
}
