//! The token prefilter against the full check: on every fixture, realistic-suite and example
//! file, (1) each rule's declared tokens are necessary — with every whole-word occurrence of
//! them rewritten, the rule reports nothing — and (2) checking with and without the prefilter
//! gives identical diagnostics, under the fixture's own settings, the default settings, every
//! rule on each backend, and each family alone (where whole files are skipped); and (3) the
//! callee filter (a `call` rule sees only the calls its `calls:` declares) changes no result:
//! the check with it equals the check where every call rule sees every call.

use std::path::{Path, PathBuf};

use tpulint_analyzer::syntax::parse;
use tpulint_analyzer::{
    BackendSetting, Configuration, Diagnostic, Family, Prefilter, RuleSet, Settings,
    TestCodePolicy, check_tree_with, rules,
};
use tpulint_tests::{fixture_paths, fixture_settings, repo_root};

/// Fixtures, the realistic suite and the examples.
fn corpus() -> Vec<PathBuf> {
    let mut paths = fixture_paths();
    for directory in ["tests/realistic", "examples"] {
        collect(&repo_root().join(directory), &mut paths);
    }
    paths.sort();
    assert!(
        paths.len() > 150,
        "the corpus shrank to {} files",
        paths.len()
    );
    paths
}

fn collect(directory: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(directory).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "py") {
            out.push(path);
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(repo_root())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn check(source: &str, settings: &Settings, prefilter: Prefilter) -> Vec<Diagnostic> {
    let tree = parse(source, None).expect("tree-sitter parses any text");
    check_tree_with(source, &tree, settings, prefilter)
}

/// Every rule, test code reported in full, on `backend`.
fn everything(backend: BackendSetting) -> Settings {
    Settings {
        rules: RuleSet::all(),
        backend,
        test_code: TestCodePolicy::All,
        ..Settings::default()
    }
}

const BACKENDS: [BackendSetting; 3] = [
    BackendSetting::Auto,
    BackendSetting::TorchXla,
    BackendSetting::TorchTpu,
];

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// `source` with every whole-word occurrence of `tokens` (ignoring ASCII case) replaced by as
/// many `Q`s: same length, same layout, none of the tokens left. Written independently of the
/// analyzer's scanner, so that a bug there cannot hide here.
fn without_tokens(source: &str, tokens: &[&str]) -> String {
    let bytes = source.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut position = 0;
    while position < bytes.len() {
        if !is_word_byte(bytes[position]) {
            out.push(bytes[position]);
            position += 1;
            continue;
        }
        let start = position;
        while position < bytes.len() && is_word_byte(bytes[position]) {
            position += 1;
        }
        let word = &bytes[start..position];
        if tokens
            .iter()
            .any(|token| token.as_bytes().eq_ignore_ascii_case(word))
        {
            out.extend(std::iter::repeat_n(b'Q', word.len()));
        } else {
            out.extend_from_slice(word);
        }
    }
    String::from_utf8(out).expect("only ASCII bytes were replaced")
}

fn mentions(source: &str, tokens: &[&str]) -> bool {
    without_tokens(source, tokens) != source
}

#[test]
fn without_tokens_rewrites_whole_words_only() {
    assert_eq!(
        without_tokens("x.item() + x.items() + ITEM_", &["item"]),
        "x.QQQQ() + x.items() + ITEM_"
    );
    assert_eq!(without_tokens("é.Item()", &["item"]), "é.QQQQ()");
}

#[test]
fn declared_tokens_are_necessary() {
    let mut failures = Vec::new();
    let mut judged = 0usize;
    for path in corpus() {
        let source = std::fs::read_to_string(&path).expect("corpus file is UTF-8");
        for backend in BACKENDS {
            let settings = everything(backend);
            let found = check(&source, &settings, Prefilter::Off);
            for rule in rules() {
                if rule.tokens.is_empty() || !found.iter().any(|d| d.code == rule.code) {
                    continue;
                }
                if !mentions(&source, rule.tokens) {
                    failures.push(format!(
                        "{}: {} reports on a file with none of its tokens {:?} ({backend:?})",
                        relative(&path),
                        rule.code,
                        rule.tokens
                    ));
                    continue;
                }
                judged += 1;
                let rewritten = without_tokens(&source, rule.tokens);
                let left: Vec<String> = check(&rewritten, &settings, Prefilter::Off)
                    .into_iter()
                    .filter(|d| d.code == rule.code)
                    .map(|d| format!("{}..{} {}", d.range.start, d.range.end, d.message))
                    .collect();
                if !left.is_empty() {
                    failures.push(format!(
                        "{}: {} still reports with its tokens {:?} rewritten ({backend:?}): {}",
                        relative(&path),
                        rule.code,
                        rule.tokens,
                        left.join("; ")
                    ));
                }
            }
        }
    }
    assert!(judged > 100, "only {judged} (file, rule) pairs were judged");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_prefilter_changes_no_result() {
    let mut failures = Vec::new();
    for path in corpus() {
        let source = std::fs::read_to_string(&path).expect("corpus file is UTF-8");
        let name = relative(&path);
        let mut variants: Vec<(String, Settings)> = vec![(
            "default".into(),
            Configuration::default().settings_for(&name),
        )];
        if path.starts_with(repo_root().join("tests/fixtures")) {
            variants.push(("fixture".into(), fixture_settings(&path, &source)));
        }
        for backend in BACKENDS {
            variants.push((format!("all rules, {backend:?}"), everything(backend)));
        }
        for family in Family::ALL {
            let mut settings = everything(BackendSetting::Auto);
            settings.rules = RuleSet::empty();
            for (index, rule) in rules().iter().enumerate() {
                if rule.family() == family {
                    settings
                        .rules
                        .set(tpulint_analyzer::RuleId(index as u16), true);
                }
            }
            variants.push((format!("{} alone", family.name()), settings));
        }
        for (label, settings) in variants {
            let filtered = check(&source, &settings, Prefilter::On);
            let full = check(&source, &settings, Prefilter::Off);
            if filtered != full {
                failures.push(format!(
                    "{name} ({label}): {} diagnostics with the prefilter, {} without",
                    filtered.len(),
                    full.len()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_file_without_any_token_gets_only_its_syntax_errors() {
    let settings = everything(BackendSetting::Auto);
    let mut settings_without_meta = settings.clone();
    // A file whose words are none of the rules' tokens: with every rule that declares tokens
    // enabled (and none that always runs), nothing is analysed, yet a syntax error is reported.
    settings_without_meta.rules = RuleSet::empty();
    for (index, rule) in rules().iter().enumerate() {
        if !rule.tokens.is_empty() {
            settings_without_meta
                .rules
                .set(tpulint_analyzer::RuleId(index as u16), true);
        }
    }
    let broken = "def f(:\n    return 1\n";
    let filtered = check(broken, &settings_without_meta, Prefilter::On);
    assert!(!filtered.is_empty());
    assert!(filtered.iter().all(|d| d.code == "invalid-syntax"));
    assert_eq!(
        filtered,
        check(broken, &settings_without_meta, Prefilter::Off)
    );
    assert!(check("x = 1\n", &settings_without_meta, Prefilter::On).is_empty());
}

/// The settings every corpus file is checked under: its own (fixtures), the defaults, every
/// rule on each backend.
fn variants(path: &Path, source: &str) -> Vec<(String, Settings)> {
    let name = relative(path);
    let mut variants: Vec<(String, Settings)> = vec![(
        "default".into(),
        Configuration::default().settings_for(&name),
    )];
    if path.starts_with(repo_root().join("tests/fixtures")) {
        variants.push(("fixture".into(), fixture_settings(path, source)));
    }
    for backend in BACKENDS {
        variants.push((format!("all rules, {backend:?}"), everything(backend)));
    }
    variants
}

#[test]
fn the_callee_filter_changes_no_result() {
    let mut failures = Vec::new();
    let mut declared_findings = 0usize;
    for path in corpus() {
        let source = std::fs::read_to_string(&path).expect("corpus file is UTF-8");
        for (label, settings) in variants(&path, &source) {
            let filtered = check(&source, &settings, Prefilter::On);
            let every_call = check(&source, &settings, Prefilter::TokensOnly);
            declared_findings += filtered
                .iter()
                .filter(|d| {
                    rules()
                        .iter()
                        .any(|r| r.code == d.code && !r.calls.is_empty())
                })
                .count();
            if filtered != every_call {
                let missing: Vec<String> = every_call
                    .iter()
                    .filter(|d| !filtered.contains(d))
                    .map(|d| {
                        format!(
                            "{} at {}..{}: {}",
                            d.code, d.range.start, d.range.end, d.message
                        )
                    })
                    .collect();
                failures.push(format!(
                    "{} ({label}): only without the callee filter: {}",
                    relative(&path),
                    missing.join("; ")
                ));
            }
        }
    }
    assert!(
        declared_findings > 200,
        "only {declared_findings} findings of rules with `calls:` were compared"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn declared_callees_are_names_of_call_rules() {
    for rule in rules() {
        if rule.calls.is_empty() {
            continue;
        }
        assert!(
            rule.kinds.contains(&"call"),
            "{} declares callees but no `call` kind",
            rule.code
        );
        for entry in rule.calls {
            let last = entry.rsplit('.').next().unwrap_or(entry);
            assert!(
                !last.is_empty()
                    && !last.starts_with(|c: char| c.is_ascii_digit())
                    && last.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{}: callee {entry:?} does not end in a Python name",
                rule.code
            );
        }
    }
}
