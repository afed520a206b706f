//! `docs/doctor.md` lists every declared finding, generated from `data/findings.toml`; this test
//! fails when the generated part is stale. `TPULINT_UPDATE_DOCS=1` rewrites it.

use std::path::PathBuf;

const BEGIN: &str = "<!-- begin generated findings -->\n";
const END: &str = "<!-- end generated findings -->";

fn doctor_md() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/doctor.md")
}

#[test]
fn doctor_md_lists_every_declared_finding() {
    let path = doctor_md();
    let text = std::fs::read_to_string(&path).expect("docs/doctor.md exists");
    let start = text.find(BEGIN).expect("begin marker") + BEGIN.len();
    let end = text.find(END).expect("end marker");
    let expected = tpulint_doctor::catalog::docs_section();
    if std::env::var_os("TPULINT_UPDATE_DOCS").is_some() {
        let updated = format!("{}{expected}{}", &text[..start], &text[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert!(
        text[start..end] == expected,
        "docs/doctor.md is stale; run `TPULINT_UPDATE_DOCS=1 cargo test -p tpulint_doctor --test docs`"
    );
    // Every id has its anchor (`#### \`id\`` → `#id`), which reports link to.
    for id in tpulint_doctor::FindingId::ALL {
        assert!(
            text.contains(&format!("#### `{}`\n", id.as_str())),
            "{}",
            id.as_str()
        );
    }
}
