//! One snapshot per rule fixture: diagnostics rendered with source excerpts and fix diffs.

#[test]
fn rule_fixtures() {
    insta::glob!("fixtures/**/*.py", |path| {
        let snapshot = tpulint_tests::run_fixture(path);
        insta::assert_snapshot!(snapshot);
    });
}
