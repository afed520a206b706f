//! Suppression comments: `# noqa`, `# noqa: TPU101, TPU102` on a line, and file-level
//! `# tpulint: noqa` / `# tpulint: noqa: TPU101`; plus the unused-suppression report (TPU901).

use tree_sitter::Node;

use crate::diagnostic::{Diagnostic, Edit, Fix, Severity};
use crate::registry::rule_by_code_or_name;
use crate::settings::RuleSet;
use crate::source::TextRange;
use crate::syntax::node_text;

/// One code listed in a `# noqa: …` comment.
#[derive(Debug, Clone)]
struct ListedCode {
    code: String,
    range: TextRange,
    used: bool,
}

#[derive(Debug, Clone)]
struct LineDirective {
    /// Byte offset of the comment (its line is resolved when applying).
    comment_start: usize,
    /// Range of the `# noqa…` text inside the comment, from `#`/`noqa` to the end of the codes.
    directive_range: TextRange,
    /// `None` for a bare `# noqa`.
    codes: Option<Vec<ListedCode>>,
}

#[derive(Debug, Clone, Default)]
enum FileDirective {
    #[default]
    None,
    All,
    Codes(Vec<String>),
}

/// Suppression comments found in one file.
#[derive(Debug, Default)]
pub struct Suppressions {
    lines: Vec<LineDirective>,
    file: FileDirective,
}

impl Suppressions {
    /// Records the directives in one `comment` node.
    pub fn add_comment(&mut self, comment: Node<'_>, source: &str) {
        self.add_comment_text(comment.start_byte(), node_text(comment, source));
    }

    /// Records the directives in the comment `text` that starts at byte `base`.
    pub fn add_comment_text(&mut self, base: usize, text: &str) {
        // Every directive (`# noqa…`, `# tpulint: noqa…`) holds the word.
        if !may_hold_directive(text) {
            return;
        }
        let lower = text.to_ascii_lowercase();
        if let Some(position) = lower.find("tpulint:") {
            let rest = &text[position + "tpulint:".len()..];
            let trimmed = rest.trim_start();
            if trimmed.to_ascii_lowercase().starts_with("noqa") {
                let after = &trimmed["noqa".len()..];
                let codes = parse_code_list(after, 0);
                self.file = match (codes, &self.file) {
                    (Some(codes), FileDirective::Codes(existing)) => {
                        let mut all = existing.clone();
                        all.extend(codes.into_iter().map(|c| c.0));
                        FileDirective::Codes(all)
                    }
                    (Some(codes), FileDirective::None) => {
                        FileDirective::Codes(codes.into_iter().map(|c| c.0).collect())
                    }
                    _ => FileDirective::All,
                };
                return;
            }
        }
        if let Some(directive) = find_noqa(text) {
            self.lines.push(LineDirective {
                comment_start: base,
                directive_range: base + directive.range.start..base + directive.range.end,
                codes: directive.codes.map(|list| {
                    list.into_iter()
                        .map(|(code, range)| ListedCode {
                            code,
                            range: base + range.start..base + range.end,
                            used: false,
                        })
                        .collect()
                }),
            });
        }
    }

    /// Drops suppressed diagnostics and appends TPU901 findings for unused `noqa` codes.
    pub fn apply(
        mut self,
        diagnostics: Vec<Diagnostic>,
        source: &str,
        enabled: &RuleSet,
    ) -> Vec<Diagnostic> {
        if self.lines.is_empty() && matches!(self.file, FileDirective::None) {
            return diagnostics;
        }
        if matches!(self.file, FileDirective::All) {
            return Vec::new();
        }
        let directive_lines = DirectiveLines::new(
            source,
            self.lines.iter().map(|directive| directive.comment_start),
        );
        let mut kept = Vec::with_capacity(diagnostics.len());
        for diagnostic in diagnostics {
            if let FileDirective::Codes(codes) = &self.file
                && codes.iter().any(|c| code_matches(c, diagnostic.code))
            {
                continue;
            }
            let (start, end) = (
                diagnostic.range.start,
                diagnostic.range.end.max(diagnostic.range.start),
            );
            let mut suppressed = false;
            for offset in [start, end] {
                let Some(position) = directive_lines.at(offset) else {
                    continue;
                };
                let directive = &mut self.lines[position];
                match &mut directive.codes {
                    None => suppressed = true,
                    Some(codes) => {
                        for listed in codes.iter_mut() {
                            if code_matches(&listed.code, diagnostic.code) {
                                listed.used = true;
                                suppressed = true;
                            }
                        }
                    }
                }
                if suppressed {
                    break;
                }
            }
            if !suppressed {
                kept.push(diagnostic);
            }
        }
        if let Some(unused_rule) = rule_by_code_or_name(UNUSED_NOQA_CODE)
            && enabled.is_enabled(unused_rule)
        {
            for directive in &self.lines {
                if let Some(diagnostic) = unused_noqa(directive, source, enabled) {
                    kept.push(diagnostic);
                }
            }
        }
        kept
    }
}

/// Whether a comment's `text` may hold a suppression directive: every one (`# noqa…`,
/// `# tpulint: noqa…`) holds `noqa`, in any case. A comment without it records nothing, so an
/// incremental check keeps (and reads again) only the comments with it.
pub fn may_hold_directive(text: &str) -> bool {
    text.as_bytes()
        .windows(4)
        .any(|window| window.eq_ignore_ascii_case(b"noqa"))
}

/// The lines holding line-level directives, for finding the directive on a diagnostic's line
/// without a line index of the whole file (built at every check, the editor's keystrokes
/// included): each directive's line as a byte span, found by scanning from its comment to the
/// line breaks around it (lines end as in [`crate::source::LineIndex`]: `\n`, `\r\n`, a lone `\r`).
struct DirectiveLines {
    /// `(line start, next line start, directive)`, by line start; the last line's span runs on
    /// (offsets past the end of the text are on the last line).
    spans: Vec<(usize, usize, usize)>,
}

impl DirectiveLines {
    fn new(source: &str, comment_starts: impl Iterator<Item = usize>) -> Self {
        let bytes = source.as_bytes();
        let mut spans: Vec<(usize, usize, usize)> = comment_starts
            .enumerate()
            .map(|(position, offset)| {
                let offset = offset.min(bytes.len());
                (
                    line_start(bytes, offset),
                    next_line_start(bytes, offset),
                    position,
                )
            })
            .collect();
        // One directive per line; should two share one, the later wins.
        // The engine's one stable sort (`crate::sort`), not another instance of the library's.
        crate::sort::sort_stably_by_key(&mut spans, |&(start, _, position)| {
            (start, position, 0, "")
        });
        spans.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                earlier.2 = later.2;
            }
            same
        });
        DirectiveLines { spans }
    }

    /// The directive on the line of `offset`.
    fn at(&self, offset: usize) -> Option<usize> {
        let index = self
            .spans
            .partition_point(|&(start, _, _)| start <= offset)
            .checked_sub(1)?;
        let (_, end, position) = self.spans[index];
        (offset < end).then_some(position)
    }
}

/// Where the line holding `offset` (at most the text's length) starts.
fn line_start(bytes: &[u8], offset: usize) -> usize {
    (1..=offset)
        .rev()
        .find(|&after| match bytes[after - 1] {
            b'\n' => true,
            // `\r\n` ends at its `\n`.
            b'\r' => bytes.get(after) != Some(&b'\n'),
            _ => false,
        })
        .unwrap_or(0)
}

/// Where the line after the one holding `offset` starts (`usize::MAX` for the last line).
fn next_line_start(bytes: &[u8], offset: usize) -> usize {
    let Some(at) = bytes[offset..]
        .iter()
        .position(|&byte| byte == b'\n' || byte == b'\r')
        .map(|at| offset + at)
    else {
        return usize::MAX;
    };
    if bytes[at] == b'\r' && bytes.get(at + 1) == Some(&b'\n') {
        at + 2
    } else {
        at + 1
    }
}

/// A line-level `# noqa` directive in one comment's text; offsets are relative to the comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoqaDirective {
    /// From the `#` before `noqa` to the end of the last listed code (or of `noqa`).
    pub range: TextRange,
    /// `None` for a bare `# noqa`; otherwise each listed code with its range.
    pub codes: Option<Vec<(String, TextRange)>>,
}

/// Finds the `# noqa` directive in a comment's text the way suppressions are read: `noqa`
/// directly after a `#` (possibly after other comment text, e.g. `# type: ignore # noqa`), codes
/// as capitals followed by digits. Shared with the language server's "disable for this line".
pub fn find_noqa(comment: &str) -> Option<NoqaDirective> {
    let lower = comment.to_ascii_lowercase();
    let mut search = 0;
    while let Some(found) = lower[search..].find("noqa") {
        let at = search + found;
        search = at + 4;
        let before = comment[..at].trim_end();
        if !before.ends_with('#') {
            continue;
        }
        let hash = before.len() - 1;
        let codes = parse_code_list(&comment[at + 4..], at + 4);
        let end = match &codes {
            Some(list) => list.last().map_or(at + 4, |(_, range)| range.end),
            None => at + 4,
        };
        return Some(NoqaDirective {
            range: hash..end,
            codes,
        });
    }
    None
}

/// The code of the unused-suppression rule.
pub const UNUSED_NOQA_CODE: &str = "TPU901";

fn unused_noqa(directive: &LineDirective, source: &str, enabled: &RuleSet) -> Option<Diagnostic> {
    let codes = directive.codes.as_ref()?;
    // Only codes of enabled tpulint rules can be judged unused; other tools' codes are left alone.
    let unused: Vec<&ListedCode> = codes
        .iter()
        .filter(|listed| {
            !listed.used
                && listed.code.starts_with("TPU")
                && rule_by_code_or_name(&listed.code).is_some_and(|id| enabled.is_enabled(id))
        })
        .collect();
    if unused.is_empty() {
        return None;
    }
    let remaining: Vec<&str> = codes
        .iter()
        .filter(|listed| !unused.iter().any(|u| std::ptr::eq(*u, *listed)))
        .map(|listed| listed.code.as_str())
        .collect();
    let edit = if remaining.is_empty() {
        // Remove the whole `# noqa: …` directive and the blank space before it.
        let mut start = directive.directive_range.start;
        let bytes = source.as_bytes();
        while start > 0 && matches!(bytes[start - 1], b' ' | b'\t') {
            start -= 1;
        }
        let comment_only = source[..directive.directive_range.start].ends_with(['#'])
            || directive.directive_range.start == directive.comment_start;
        let start = if comment_only {
            start
        } else {
            directive.directive_range.start
        };
        Edit::delete(start..directive.directive_range.end)
    } else {
        let first = codes.first()?.range.start;
        let last = codes.last()?.range.end;
        Edit::replace(first..last, crate::syntax::join(&remaining, ", "))
    };
    let listed: Vec<&str> = unused.iter().map(|u| u.code.as_str()).collect();
    let rule = rule_by_code_or_name(UNUSED_NOQA_CODE)?.meta();
    Some(Diagnostic {
        code: rule.code,
        name: rule.name,
        message: format!(
            "Unused `noqa` directive (unused: {})",
            crate::syntax::join(&listed, ", ")
        ),
        range: directive.directive_range.clone(),
        severity: Severity::Info,
        fix: Some(Fix::safe("Remove unused `noqa` directive", vec![edit])),
        related: Vec::new(),
        tag: Some(crate::diagnostic::DiagnosticTag::Unnecessary),
    })
}

/// `TPU1` in a noqa list matches `TPU101` (flake8 prefix semantics); names match too.
fn code_matches(listed: &str, code: &str) -> bool {
    listed.eq_ignore_ascii_case(code)
        || (listed.len() < code.len() && code.starts_with(&listed.to_ascii_uppercase()))
        || rule_by_code_or_name(listed).is_some_and(|id| id.meta().code == code)
}

/// Parses `: CODE, CODE` after `noqa`; `None` when there is no colon (a bare directive).
/// Codes are uppercase letters followed by digits (`TPU101`, `E501`); the list ends at the first
/// word that is not one. Offsets are relative to the comment start (`offset` is where `rest` begins).
fn parse_code_list(rest: &str, offset: usize) -> Option<Vec<(String, TextRange)>> {
    let trimmed = rest.trim_start();
    let colon_at = rest.len() - trimmed.len();
    let after_colon = trimmed.strip_prefix(':')?;
    let base = offset + colon_at + 1;
    let mut codes = Vec::new();
    let mut position = 0;
    let bytes = after_colon.as_bytes();
    loop {
        while position < bytes.len() && matches!(bytes[position], b' ' | b'\t' | b',') {
            position += 1;
        }
        let start = position;
        while position < bytes.len() && bytes[position].is_ascii_uppercase() {
            position += 1;
        }
        let letters_end = position;
        while position < bytes.len() && bytes[position].is_ascii_digit() {
            position += 1;
        }
        let is_code = letters_end > start
            && position > letters_end
            && (position == bytes.len() || matches!(bytes[position], b' ' | b'\t' | b','));
        if !is_code {
            break;
        }
        codes.push((
            after_colon[start..position].to_string(),
            base + start..base + position,
        ));
    }
    if codes.is_empty() { None } else { Some(codes) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_list_parsing() {
        let parsed = parse_code_list(": TPU101, TPU102  trailing words", 0).unwrap();
        let codes: Vec<&str> = parsed.iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(codes, ["TPU101", "TPU102"]);
        assert!(parse_code_list("  because", 0).is_none());
    }

    /// The directive found on an offset's line is the one a line index of the whole file finds,
    /// whatever mix of `\n`, `\r\n` and lone `\r` ends the lines, offsets past the end included.
    #[test]
    fn directive_lines_agree_with_a_line_index() {
        use crate::source::LineIndex;
        let pieces = ["a", "#", "\n", "\r", "\r\n", "\n\r", "é"];
        let mut next = crate::test_random(0x2545_f491_4f6c_dd1d_u64);
        for _ in 0..2_000 {
            let text: String = (0..next(12)).map(|_| pieces[next(pieces.len())]).collect();
            let comments: Vec<usize> = (0..text.len())
                .filter(|&at| text.as_bytes()[at] == b'#')
                .collect();
            let lines = DirectiveLines::new(&text, comments.iter().copied());
            let index = LineIndex::new(&text);
            for offset in 0..text.len() + 3 {
                let expected = comments
                    .iter()
                    .rposition(|&comment| index.line_of(comment) == index.line_of(offset));
                assert_eq!(lines.at(offset), expected, "{offset} in {text:?}");
            }
        }
    }
}
