//! Meta-tests: rule docs and names follow the conventions (references name public sources),
//! codes are unique, every rule has a fixture, every snapshot has a fixture, node kinds exist in
//! the grammar, modules have `//!` headers, and `docs/rules/` matches the rule docs.

use std::collections::HashSet;
use std::path::Path;

use tpulint_analyzer::checker::unknown_kinds;
use tpulint_analyzer::{FixAvailability, rules};
use tpulint_tests::{fixture_code, fixture_paths, repo_root};

const REQUIRED_SECTIONS: &[&str] = &[
    "## What it does",
    "## Why is this bad?",
    "## Example",
    "Use instead",
    "## References",
];

const DISALLOWED_NAME_PREFIXES: &[&str] = &[
    "avoid-",
    "do-not-",
    "dont-",
    "use-",
    "prefer-",
    "no-",
    "disallow-",
    "banned-",
];

#[test]
fn rule_docs_have_required_sections_in_order() {
    for rule in rules() {
        let docs = rule.docs_markdown();
        let mut last = 0;
        for section in REQUIRED_SECTIONS {
            let position = docs
                .find(section)
                .unwrap_or_else(|| panic!("{} docs lack `{section}`", rule.code));
            assert!(
                position >= last,
                "{} docs: `{section}` is out of order",
                rule.code
            );
            last = position;
        }
        if rule.fix != FixAvailability::None {
            assert!(
                docs.contains("## Fix safety"),
                "{} offers fixes but its docs lack `## Fix safety`",
                rule.code
            );
        }
        assert!(
            !rule.summary().is_empty(),
            "{} has an empty summary",
            rule.code
        );
    }
}

/// Notes of the team that readers cannot open; a rule's references must name public sources.
const PRIVATE_NOTES: &[&str] = &[
    "pitfalls.md",
    "torchtpu.md",
    "update-2026-12.md",
    "users-and-sources.md",
    "pitfall catalog",
];

#[test]
fn rule_references_name_sources_a_reader_can_open() {
    for rule in rules() {
        let docs = rule.docs_markdown();
        let references = &docs[docs.find("## References").expect("checked above")..];
        for note in PRIVATE_NOTES {
            assert!(
                !references.contains(note),
                "{} cites `{note}`, which readers cannot open: cite the public source it rests on",
                rule.code
            );
        }
        // Every item names a URL, a repository path or a named public document.
        for item in references.lines().filter(|line| line.starts_with("- ")) {
            assert!(
                item.len() > 12,
                "{} has a reference too short to find: `{item}`",
                rule.code
            );
        }
    }
}

#[test]
fn codes_and_names_are_unique_and_well_formed() {
    let mut codes = HashSet::new();
    let mut names = HashSet::new();
    for rule in rules() {
        assert!(codes.insert(rule.code), "duplicate code {}", rule.code);
        assert!(names.insert(rule.name), "duplicate name {}", rule.name);
        let digits = rule.code.strip_prefix("TPU").expect("codes start with TPU");
        assert!(
            digits.len() == 3 && digits.bytes().all(|b| b.is_ascii_digit()),
            "{}: codes are TPU + three digits",
            rule.code
        );
        assert!(
            rule.name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{}: names are kebab-case",
            rule.name
        );
        for prefix in DISALLOWED_NAME_PREFIXES {
            assert!(
                !rule.name.starts_with(prefix),
                "{}: names read as \"allow <name>\"; `{prefix}` does not",
                rule.name
            );
        }
    }
}

#[test]
fn every_rule_has_a_fixture() {
    let fixture_codes: HashSet<String> = fixture_paths().iter().map(|p| fixture_code(p)).collect();
    for rule in rules() {
        assert!(
            fixture_codes.contains(rule.code),
            "{} has no fixture under tests/fixtures/",
            rule.code
        );
    }
}

#[test]
fn every_snapshot_has_a_fixture() {
    let fixtures: HashSet<String> = fixture_paths()
        .iter()
        .map(|p| {
            p.strip_prefix(repo_root().join("tests/fixtures"))
                .unwrap()
                .to_string_lossy()
                .replace(['/', '\\'], "__")
        })
        .collect();
    let snapshots = std::fs::read_dir(repo_root().join("tests/snapshots")).expect("snapshots dir");
    for entry in snapshots.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(fixture) = name
            .strip_prefix("rules__rule_fixtures@")
            .and_then(|rest| rest.strip_suffix(".snap"))
        else {
            continue;
        };
        assert!(
            fixtures.contains(fixture),
            "snapshot {name} has no fixture (delete it)"
        );
    }
}

#[test]
fn rule_node_kinds_exist_in_the_grammar() {
    for rule in rules() {
        let unknown = unknown_kinds(rule);
        assert!(
            unknown.is_empty(),
            "{}: unknown node kinds {unknown:?}",
            rule.code
        );
    }
}

#[test]
fn grammar_vocabulary_matches_the_grammar() {
    let vocabulary = std::fs::read_to_string(repo_root().join("grammars/python/node-kinds.txt"))
        .expect("grammars/python/node-kinds.txt");
    let language: &tree_sitter::Language = &tpulint_analyzer::syntax::PYTHON;
    for kind in vocabulary
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        assert_ne!(
            language.id_for_node_kind(kind, true),
            0,
            "grammars/python/node-kinds.txt lists `{kind}`, unknown to the pinned grammar"
        );
    }
    for rule in rules() {
        for kind in rule.kinds {
            assert!(
                vocabulary.lines().any(|l| l.trim() == *kind),
                "{} uses node kind `{kind}`, missing from grammars/python/node-kinds.txt",
                rule.code
            );
        }
    }
}

#[test]
fn rust_modules_start_with_a_doc_line() {
    let mut missing = Vec::new();
    for dir in ["server", "tests", "bench"] {
        visit_rs(&repo_root().join(dir), &mut missing);
    }
    assert!(
        missing.is_empty(),
        "files without a `//!` first line: {missing:#?}"
    );
}

fn visit_rs(dir: &Path, missing: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if path.is_dir() {
            if name != "target" && name != "node_modules" && name != "fixtures" && name != "pkg" {
                visit_rs(&path, missing);
            }
        } else if name.ends_with(".rs") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if !text.starts_with("//!") {
                missing.push(path.display().to_string());
            }
        }
    }
}

/// `docs/rules/<CODE>.md` and `docs/rules/README.md` are generated from the rule docs.
/// Run with `TPULINT_UPDATE_DOCS=1` to regenerate.
#[test]
fn rule_docs_pages_are_up_to_date() {
    let dir = repo_root().join("docs/rules");
    let update = std::env::var_os("TPULINT_UPDATE_DOCS").is_some();
    let mut expected = vec![("README.md".to_string(), tpulint_tests::docs::index_page())];
    for rule in rules() {
        expected.push((
            format!("{}.md", rule.code),
            tpulint_tests::docs::rule_page(rule),
        ));
    }
    if update {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, content) in &expected {
            std::fs::write(dir.join(name), content).unwrap();
        }
        return;
    }
    let mut stale = Vec::new();
    for (name, content) in &expected {
        let actual = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        if &actual != content {
            stale.push(name.clone());
        }
    }
    let expected_names: HashSet<&str> = expected.iter().map(|(n, _)| n.as_str()).collect();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if !expected_names.contains(name.as_str()) {
                stale.push(format!("{name} (no such rule)"));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "docs/rules is stale: {stale:?}; run `TPULINT_UPDATE_DOCS=1 cargo test -p tpulint_tests --test meta`"
    );
}

/// `Node::parent` walks down from the root and is linear in the siblings on that path, so a rule
/// calling it on every node is quadratic on a large flat module. Rules use `context.parent(node)`.
#[test]
fn rules_do_not_call_node_parent() {
    let mut offenders = Vec::new();
    let mut files = Vec::new();
    collect_rs(&repo_root().join("server/analyzer/src/rules"), &mut files);
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            if line.contains(".parent()") && !line.trim_start().starts_with("//") {
                offenders.push(format!("{}:{}", path.display(), number + 1));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "use `context.parent(node)` instead of `Node::parent` in rules: {offenders:#?}"
    );
}

fn collect_rs(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
