//! Generates `docs/rules/`: one page per rule from its doc comment, and an index table.

use tpulint_analyzer::{Family, RuleMeta, rules};

/// The page for one rule.
pub fn rule_page(rule: &RuleMeta) -> String {
    let mut page = format!("# {} ({})\n\n", rule.name, rule.code);
    page.push_str(&format!(
        "Family: {} · Default severity: {} · Fix: {} · Enabled by default: {}\n\n",
        rule.family().name(),
        rule.severity.as_str(),
        rule.fix.as_str(),
        if rule.enabled_by_default { "yes" } else { "no" }
    ));
    page.push_str(rule.docs_markdown().trim_end());
    page.push('\n');
    page
}

/// The index of all rules, grouped by family.
pub fn index_page() -> String {
    let mut page = String::from(
        "# Rules\n\nGenerated from the rule docs by `TPULINT_UPDATE_DOCS=1 cargo test -p tpulint_tests --test meta`; do not edit by hand.\n",
    );
    for family in Family::ALL {
        let members: Vec<&&RuleMeta> = rules().iter().filter(|r| r.family() == family).collect();
        if members.is_empty() {
            continue;
        }
        page.push_str(&format!(
            "\n## {} ({}xx)\n\n| Code | Name | Severity | Fix | Summary |\n|---|---|---|---|---|\n",
            family.name(),
            family.prefix()
        ));
        for rule in members {
            page.push_str(&format!(
                "| [{code}]({code}.md) | {name} | {severity} | {fix} | {summary} |\n",
                code = rule.code,
                name = rule.name,
                severity = rule.severity.as_str(),
                fix = rule.fix.as_str(),
                summary = rule.summary().replace('|', "\\|")
            ));
        }
    }
    page
}
