//! The labelled realistic suite: files under `tests/realistic/` written in the style of real
//! projects, with `# expect: TPUxxx` on lines a TPU user wants flagged and `# ok` on look-alikes
//! that must stay quiet. Every file is checked with the default settings; recall and precision
//! per family and overall are printed and compared with the floors in `tests/realistic/floors.txt`.
//!
//! Markers (a trailing comment on the line the finding should start on, or any line it spans):
//! - `# expect: TPU101` — this rule should report here; `TPU101, TPU405` — both should;
//!   `TPU101|TPU106` — either satisfies the label (and neither is a false positive);
//!   `TPU3xx` — any rule of the family; `TPUxxx` — any rule (for constructs no rule covers yet).
//! - `# ok` — nothing should report here.
//! - `# debatable` — findings here count neither way.
//!
//! A finding on a line without an `expect` naming it is a false positive. Set
//! `TPULINT_REALISTIC_REPORT=<path>` to also write every miss and false positive to a file.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use tpulint_analyzer::{
    Configuration, Family, LineIndex, RuleSet, check_source, rule_by_code_or_name,
};

/// One alternative a label accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    Code(String),
    Family(Family),
    Any,
}

impl Pattern {
    fn parse(text: &str, context: &str) -> Pattern {
        if text == "TPUxxx" {
            return Pattern::Any;
        }
        if let Some(digit) = text.strip_suffix("xx") {
            let family = Family::from_code(&format!("{digit}00"))
                .unwrap_or_else(|| panic!("{context}: unknown family pattern `{text}`"));
            return Pattern::Family(family);
        }
        let id = rule_by_code_or_name(text).unwrap_or_else(|| {
            panic!("{context}: `{text}` names no rule (use `TPU{{n}}xx` or `TPUxxx` for constructs no rule covers yet)")
        });
        assert!(
            RuleSet::defaults().is_enabled(id),
            "{context}: `{text}` is off by default; the suite measures the default settings"
        );
        Pattern::Code(text.to_string())
    }

    fn matches(&self, code: &str) -> bool {
        match self {
            Pattern::Code(c) => c == code,
            Pattern::Family(f) => Family::from_code(code) == Some(*f),
            Pattern::Any => true,
        }
    }

    /// The family a label is counted under for recall ("unassigned" for `TPUxxx`).
    fn family_name(&self) -> &'static str {
        match self {
            Pattern::Code(c) => Family::from_code(c).map_or("meta", Family::name),
            Pattern::Family(f) => f.name(),
            Pattern::Any => "unassigned",
        }
    }

    fn describe(&self) -> String {
        match self {
            Pattern::Code(c) => c.clone(),
            Pattern::Family(f) => format!("{}xx", f.prefix()),
            Pattern::Any => "TPUxxx".to_string(),
        }
    }
}

/// What a line's marker says.
#[derive(Debug, Clone)]
enum Marker {
    /// Each inner list is one required finding, satisfied by any of its alternatives.
    Expect(Vec<Vec<Pattern>>),
    Ok,
    Debatable,
}

/// Markers by 0-based line, read from trailing comments.
fn parse_markers(path: &Path, source: &str) -> BTreeMap<usize, Marker> {
    let mut markers = BTreeMap::new();
    for (line_no, line) in source.lines().enumerate() {
        let context = format!("{}:{}", path.display(), line_no + 1);
        let Some(hash) = line.rfind('#') else {
            continue;
        };
        let comment = line[hash + 1..].trim();
        if let Some(rest) = comment.strip_prefix("expect:") {
            let required = rest
                .split(',')
                .map(|group| {
                    group
                        .split('|')
                        .map(|alternative| Pattern::parse(alternative.trim(), &context))
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>();
            assert!(
                required.iter().all(|g| !g.is_empty()),
                "{context}: empty label"
            );
            markers.insert(line_no, Marker::Expect(required));
        } else if comment == "ok" || comment.starts_with("ok ") {
            markers.insert(line_no, Marker::Ok);
        } else if comment == "debatable" || comment.starts_with("debatable ") {
            markers.insert(line_no, Marker::Debatable);
        }
    }
    markers
}

#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    expected: usize,
    found: usize,
    true_findings: usize,
    false_findings: usize,
}

impl Tally {
    fn recall(&self) -> f64 {
        if self.expected == 0 {
            1.0
        } else {
            self.found as f64 / self.expected as f64
        }
    }

    fn precision(&self) -> f64 {
        let reported = self.true_findings + self.false_findings;
        if reported == 0 {
            1.0
        } else {
            self.true_findings as f64 / reported as f64
        }
    }
}

#[derive(Debug, Default)]
struct Score {
    families: BTreeMap<&'static str, Tally>,
    overall: Tally,
    misses: Vec<String>,
    false_positives: Vec<String>,
    files: usize,
    ok_lines: usize,
}

fn family_of_code(code: &str) -> &'static str {
    Family::from_code(code).map_or("meta", Family::name)
}

/// Checks one file with the default settings and adds its outcome to `score`.
fn score_file(root: &Path, path: &Path, score: &mut Score) {
    let source = std::fs::read_to_string(path).expect("realistic file is UTF-8");
    let relative = path
        .strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string();
    let markers = parse_markers(path, &source);
    let index = LineIndex::new(&source);
    // The default configuration, resolved for the file as the CLI resolves it: each file is
    // treated as if it sat at a project's root, so `test_*.py` is test code and the others not.
    let settings = Configuration::default().settings_for(&relative);
    let diagnostics = check_source(&source, &settings);

    // satisfied[(line, group)] once some finding matched that required finding.
    let mut satisfied: BTreeMap<(usize, usize), bool> = BTreeMap::new();
    for (&line, marker) in &markers {
        if let Marker::Expect(groups) = marker {
            for group in 0..groups.len() {
                satisfied.insert((line, group), false);
            }
        }
    }
    score.ok_lines += markers.values().filter(|m| matches!(m, Marker::Ok)).count();

    for diagnostic in &diagnostics {
        let first = index.line_of(diagnostic.range.start);
        let last = index.line_of(diagnostic.range.end.max(diagnostic.range.start + 1) - 1);
        let mut matched = false;
        let mut debatable = false;
        for (&line, marker) in markers.range(first..=last.max(first)) {
            match marker {
                Marker::Expect(groups) => {
                    for (g, alternatives) in groups.iter().enumerate() {
                        if alternatives.iter().any(|p| p.matches(diagnostic.code)) {
                            satisfied.insert((line, g), true);
                            matched = true;
                        }
                    }
                }
                Marker::Debatable => debatable = true,
                Marker::Ok => {}
            }
        }
        if debatable && !matched {
            continue;
        }
        let family = score
            .families
            .entry(family_of_code(diagnostic.code))
            .or_default();
        if matched {
            family.true_findings += 1;
            score.overall.true_findings += 1;
        } else {
            family.false_findings += 1;
            score.overall.false_findings += 1;
            score.false_positives.push(format!(
                "{relative}:{}: {} {}",
                first + 1,
                diagnostic.code,
                diagnostic.message
            ));
        }
    }

    for (&(line, group), &found) in &satisfied {
        let Some(Marker::Expect(groups)) = markers.get(&line) else {
            unreachable!("satisfied keys come from expect markers");
        };
        let alternatives = &groups[group];
        let family = score
            .families
            .entry(alternatives[0].family_name())
            .or_default();
        family.expected += 1;
        score.overall.expected += 1;
        if found {
            family.found += 1;
            score.overall.found += 1;
        } else {
            let wanted = alternatives
                .iter()
                .map(Pattern::describe)
                .collect::<Vec<_>>()
                .join("|");
            let text = source.lines().nth(line).unwrap_or("").trim();
            score
                .misses
                .push(format!("{relative}:{}: {wanted}: {text}", line + 1));
        }
    }
    score.files += 1;
}

fn realistic_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("tests/realistic exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    files.sort();
    files
}

/// `name recall precision` lines; `#` starts a comment.
fn read_floors(path: &Path) -> BTreeMap<String, (f64, f64)> {
    let text = std::fs::read_to_string(path).expect("tests/realistic/floors.txt exists");
    let mut floors = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            fields.len(),
            3,
            "floors.txt:{}: expected `name recall precision`",
            n + 1
        );
        let parse = |s: &str| -> f64 {
            s.parse()
                .unwrap_or_else(|_| panic!("floors.txt:{}: `{s}` is not a number", n + 1))
        };
        floors.insert(fields[0].to_string(), (parse(fields[1]), parse(fields[2])));
    }
    floors
}

fn render(score: &Score) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "realistic suite: {} files, {} expected findings, {} `# ok` lines",
        score.files, score.overall.expected, score.ok_lines
    );
    let _ = writeln!(
        out,
        "{:<18} {:>8} {:>6} {:>7} {:>9} {:>4} {:>4}",
        "family", "expected", "found", "recall", "precision", "TP", "FP"
    );
    let mut row = |name: &str, t: &Tally| {
        let _ = writeln!(
            out,
            "{:<18} {:>8} {:>6} {:>7.3} {:>9.3} {:>4} {:>4}",
            name,
            t.expected,
            t.found,
            t.recall(),
            t.precision(),
            t.true_findings,
            t.false_findings
        );
    };
    for (name, tally) in &score.families {
        row(name, tally);
    }
    row("overall", &score.overall);
    let _ = writeln!(out, "\nmisses ({}):", score.misses.len());
    for miss in &score.misses {
        let _ = writeln!(out, "  {miss}");
    }
    let _ = writeln!(out, "\nfalse positives ({}):", score.false_positives.len());
    for fp in &score.false_positives {
        let _ = writeln!(out, "  {fp}");
    }
    out
}

#[test]
fn realistic_suite_meets_its_floors() {
    let root = tpulint_tests::repo_root().join("tests/realistic");
    let files = realistic_files(&root);
    assert!(
        files.len() >= 40,
        "the realistic suite should hold at least 40 files, found {}",
        files.len()
    );
    let mut score = Score::default();
    for file in &files {
        score_file(&root, file, &mut score);
    }
    let report = render(&score);
    println!("{report}");
    if let Ok(path) = std::env::var("TPULINT_REALISTIC_REPORT") {
        std::fs::write(&path, &report).expect("report path is writable");
    }

    let floors = read_floors(&root.join("floors.txt"));
    let mut failures = Vec::new();
    for (name, &(min_recall, min_precision)) in &floors {
        let tally = if name == "overall" {
            score.overall
        } else {
            score
                .families
                .get(name.as_str())
                .copied()
                .unwrap_or_default()
        };
        // Floors are recorded to three decimals; compare at that resolution.
        let recall = (tally.recall() * 1000.0).round() / 1000.0;
        let precision = (tally.precision() * 1000.0).round() / 1000.0;
        if recall < min_recall {
            failures.push(format!(
                "{name}: recall {recall:.3} < floor {min_recall:.3}"
            ));
        }
        if precision < min_precision {
            failures.push(format!(
                "{name}: precision {precision:.3} < floor {min_precision:.3}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "realistic suite below its floors:\n  {}\n\n{report}",
        failures.join("\n  ")
    );
}

#[test]
fn markers_are_parsed_as_documented() {
    let source = "a.item()  # expect: TPU101|TPU106, TPU3xx\nb = 1  # ok\nc  # debatable\nd  # expect: TPUxxx\n";
    let markers = parse_markers(Path::new("t.py"), source);
    let Some(Marker::Expect(groups)) = markers.get(&0) else {
        panic!("line 1 is an expect marker: {markers:?}");
    };
    assert_eq!(groups.len(), 2);
    assert!(groups[0][1].matches("TPU106") && !groups[0][0].matches("TPU106"));
    assert!(groups[1][0].matches("TPU309") && !groups[1][0].matches("TPU401"));
    assert!(matches!(markers.get(&1), Some(Marker::Ok)));
    assert!(matches!(markers.get(&2), Some(Marker::Debatable)));
    let Some(Marker::Expect(any)) = markers.get(&3) else {
        panic!("line 4 is an expect marker");
    };
    assert!(any[0][0].matches("TPU701") && any[0][0].family_name() == "unassigned");
}
