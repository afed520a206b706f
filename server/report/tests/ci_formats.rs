//! Schema tests of the formats CI services read: `gitlab` (GitLab Code Quality), `junit` and
//! `json-lines`, on diagnostics the real rules produce.

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;
use tpulint_analyzer::{Configuration, check_source};
use tpulint_report::SourceFile;
use tpulint_report::gitlab::render_gitlab;
use tpulint_report::json::{render_json, render_json_lines};
use tpulint_report::junit::render_junit;

/// A PyTorch/XLA loop with a host sync and two deprecated APIs.
const TRAIN: &str = "\
import torch
import torch_xla.core.xla_model as xm

device = xm.xla_device()
for batch in loader:
    loss = model(batch)
    print(loss.item())
    xm.mark_step()
";

fn checked(name: &str, text: &str) -> SourceFile {
    let settings = Configuration::default().settings_for(name);
    let diagnostics = check_source(text, &settings);
    SourceFile::new(name, text, diagnostics).with_absolute_path(format!("/builds/team/app/{name}"))
}

fn files() -> Vec<SourceFile> {
    let files = vec![
        checked("src/train.py", TRAIN),
        checked("src/clean.py", "import torch\n"),
        // A name with XML's special characters.
        checked("a&b/<x>.py", TRAIN),
    ];
    assert!(
        files[0].diagnostics.len() >= 3,
        "{:?}",
        files[0].diagnostics
    );
    files
}

fn gitlab(files: &[SourceFile], project_dir: Option<&Path>) -> Vec<Value> {
    let report: Value = serde_json::from_str(&render_gitlab(files, project_dir)).expect("JSON");
    report.as_array().expect("a list of issues").clone()
}

#[test]
fn gitlab_issues_have_every_field_code_quality_requires() {
    let files = files();
    let issues = gitlab(&files, None);
    let total: usize = files.iter().map(|file| file.diagnostics.len()).sum();
    assert_eq!(issues.len(), total);
    let mut fingerprints = HashSet::new();
    for issue in &issues {
        let object = issue.as_object().expect("an object");
        let keys: Vec<&str> = object.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "check_name",
                "description",
                "fingerprint",
                "location",
                "severity"
            ],
            "{issue}"
        );
        let check_name = issue["check_name"].as_str().expect("check_name");
        assert!(check_name.starts_with("TPU"), "{issue}");
        let description = issue["description"].as_str().expect("description");
        // GitLab shows only the description: it starts with the code, as ruff's does.
        assert!(
            description.starts_with(&format!("{check_name}: ")) && description.len() > 12,
            "{issue}"
        );
        assert!(
            ["info", "minor", "major", "critical", "blocker"]
                .contains(&issue["severity"].as_str().expect("severity")),
            "{issue}"
        );
        let fingerprint = issue["fingerprint"].as_str().expect("fingerprint");
        assert!(
            fingerprint.len() == 16 && fingerprint.chars().all(|c| c.is_ascii_hexdigit()),
            "{issue}"
        );
        assert!(
            fingerprints.insert(fingerprint.to_string()),
            "duplicate {issue}"
        );
        let path = issue["location"]["path"].as_str().expect("location.path");
        assert!(!path.starts_with('/'), "{issue}");
        let begin = issue["location"]["lines"]["begin"]
            .as_u64()
            .expect("location.lines.begin");
        let end = issue["location"]["lines"]["end"].as_u64().expect("end");
        assert!(begin >= 1 && end >= begin, "{issue}");
    }
    let item = issues
        .iter()
        .find(|issue| issue["description"].as_str().unwrap().contains(".item()"))
        .expect("the host sync");
    assert_eq!(item["location"]["path"], "src/train.py");
    assert_eq!(item["location"]["lines"]["begin"], 7);
}

#[test]
fn gitlab_paths_are_relative_to_the_ci_project_dir() {
    let files = vec![
        checked("src/train.py", TRAIN)
            .with_absolute_path("/builds/team/app/sub/src/train.py".to_string()),
    ];
    let issues = gitlab(&files, Some(Path::new("/builds/team/app")));
    assert!(!issues.is_empty());
    assert!(
        issues
            .iter()
            .all(|issue| issue["location"]["path"] == "sub/src/train.py")
    );
    // A file outside the project directory keeps its displayed name.
    let issues = gitlab(&files, Some(Path::new("/elsewhere")));
    assert!(
        issues
            .iter()
            .all(|issue| issue["location"]["path"] == "src/train.py")
    );
}

#[test]
fn gitlab_fingerprints_survive_unrelated_edits_and_stay_unique() {
    let fingerprints = |text: &str| -> Vec<String> {
        gitlab(&[checked("train.py", text)], None)
            .iter()
            .map(|issue| issue["fingerprint"].as_str().unwrap().to_string())
            .collect()
    };
    let before = fingerprints(TRAIN);
    // Lines added above every finding: the same findings, the same fingerprints.
    let after = fingerprints(&TRAIN.replacen("import torch\n", "import os\nimport torch\n\n", 1));
    assert_eq!(before, after);

    // The same finding twice on identical lines still gives two distinct fingerprints.
    let twice =
        format!("{TRAIN}for batch in loader:\n    loss = model(batch)\n    print(loss.item())\n");
    let fingerprints = fingerprints(&twice);
    let unique: HashSet<&String> = fingerprints.iter().collect();
    assert_eq!(unique.len(), fingerprints.len());
}

#[test]
fn gitlab_report_of_a_clean_run_is_an_empty_list() {
    assert_eq!(
        render_gitlab(&[checked("clean.py", "x = 1\n")], None),
        "[]\n"
    );
}

#[test]
fn junit_has_a_suite_per_file_and_a_failed_case_per_finding() {
    let files = files();
    let xml = render_junit(&files);
    let document = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(root.attribute("name"), Some("tpulint"));
    let total: usize = files.iter().map(|file| file.diagnostics.len()).sum();
    assert_eq!(root.attribute("tests"), Some(total.to_string().as_str()));
    assert_eq!(root.attribute("failures"), Some(total.to_string().as_str()));
    assert_eq!(root.attribute("errors"), Some("0"));

    let suites: Vec<_> = root.children().filter(|node| node.is_element()).collect();
    let with_findings: Vec<&SourceFile> =
        files.iter().filter(|f| !f.diagnostics.is_empty()).collect();
    assert_eq!(suites.len(), with_findings.len());
    for (suite, file) in suites.iter().zip(&with_findings) {
        assert_eq!(suite.tag_name().name(), "testsuite");
        assert_eq!(suite.attribute("name"), Some(file.name.as_str()));
        let count = file.diagnostics.len().to_string();
        assert_eq!(suite.attribute("tests"), Some(count.as_str()));
        assert_eq!(suite.attribute("failures"), Some(count.as_str()));
        let cases: Vec<_> = suite.children().filter(|node| node.is_element()).collect();
        assert_eq!(cases.len(), file.diagnostics.len());
        for (case, diagnostic) in cases.iter().zip(&file.diagnostics) {
            assert_eq!(case.tag_name().name(), "testcase");
            assert_eq!(
                case.attribute("name"),
                Some(format!("tpulint.{}", diagnostic.code).as_str())
            );
            let start = file.location(diagnostic.range.start);
            assert_eq!(case.attribute("line"), Some(start.row.to_string().as_str()));
            assert_eq!(
                case.attribute("column"),
                Some(start.column.to_string().as_str())
            );
            let failure = case
                .children()
                .find(|node| node.has_tag_name("failure"))
                .expect("a failure");
            assert_eq!(
                failure.attribute("message"),
                Some(diagnostic.message.as_str())
            );
            assert_eq!(
                failure.text(),
                Some(
                    format!(
                        "line {}, col {}, {}",
                        start.row, start.column, diagnostic.message
                    )
                    .as_str()
                )
            );
        }
    }
    assert_eq!(
        suites[0]
            .children()
            .find(|n| n.is_element())
            .unwrap()
            .attribute("classname"),
        Some("src/train")
    );
    // Special characters survive the round trip.
    assert_eq!(suites[1].attribute("name"), Some("a&b/<x>.py"));
}

#[test]
fn junit_of_a_clean_run_is_one_passing_case() {
    let xml = render_junit(&[checked("clean.py", "x = 1\n")]);
    let document = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = document.root_element();
    assert_eq!(root.attribute("tests"), Some("1"));
    assert_eq!(root.attribute("failures"), Some("0"));
    let cases: Vec<_> = root
        .descendants()
        .filter(|node| node.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 1);
    assert!(cases[0].children().all(|node| !node.is_element()));
}

#[test]
fn json_lines_are_the_json_objects_one_per_line() {
    let files = files();
    let array: Value = serde_json::from_str(&render_json(&files)).expect("JSON");
    let lines = render_json_lines(&files);
    assert!(lines.ends_with('\n'));
    let objects: Vec<Value> = lines
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();
    assert_eq!(Value::Array(objects.clone()), array);
    for object in &objects {
        for key in [
            "code",
            "filename",
            "location",
            "end_location",
            "message",
            "noqa_row",
            "url",
        ] {
            assert!(object.get(key).is_some(), "{key} in {object}");
        }
    }
    assert_eq!(render_json_lines(&[checked("clean.py", "x = 1\n")]), "");
}

#[test]
fn notebook_findings_name_their_cell() {
    // Two code cells checked as one module: the `.item()` is on the third line of cell 3.
    let text = "import torch\nimport torch_xla.core.xla_model as xm\n\nfor batch in loader:\n    loss = model(batch)\n    print(loss.item())\n";
    let cell_starts = [(0, 1), (text.find("for").unwrap(), 3)];
    let notebook = checked("train.ipynb", text).with_cells(&cell_starts);
    let item = notebook
        .diagnostics
        .iter()
        .position(|diagnostic| diagnostic.message.contains(".item()"))
        .expect("the host sync");

    let issues = gitlab(std::slice::from_ref(&notebook), None);
    let issue = &issues[item];
    assert!(
        issue["description"]
            .as_str()
            .unwrap()
            .ends_with("(cell 3, line 3)"),
        "{issue}"
    );
    assert_eq!(issue["location"]["lines"]["begin"], 1);

    let xml = render_junit(std::slice::from_ref(&notebook));
    let document = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let case = document
        .descendants()
        .filter(|node| node.has_tag_name("testcase"))
        .nth(item)
        .expect("a case");
    assert_eq!(case.attribute("line"), Some("3"));
    let failure = case
        .children()
        .find(|node| node.has_tag_name("failure"))
        .unwrap();
    assert!(
        failure.text().unwrap().starts_with("cell 3, line 3, col "),
        "{xml}"
    );
}
