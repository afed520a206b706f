//! IPython syntax in notebook cells (`%magic`, `!shell`, `obj?`, `%%cell` magics), replaced by
//! whitespace of the same byte length so that offsets in a cell stay offsets in the module.

use std::ops::Range;

use tpulint_analyzer::TextRange;

/// Cell magics whose body is Python run by the kernel (`%%time` times the cell's code); any
/// other cell magic (`%%bash`, `%%html`, `%%writefile`) makes the cell not Python.
const PYTHON_CELL_MAGICS: [&str; 8] = [
    "time", "timeit", "capture", "prun", "debug", "python", "python3", "pypy",
];

/// A cell's text with IPython-only syntax replaced by whitespace of the same byte length (line
/// breaks kept), and the cell-local byte ranges that were replaced.
pub fn neutralise_ipython(cell: &str) -> (String, Vec<TextRange>) {
    let mut output = cell.to_string();
    let mut neutralised: Vec<TextRange> = Vec::new();
    let lines = line_ranges(cell);
    if let Some(first) = lines.first() {
        let first_line = &cell[first.clone()];
        if let Some(magic) = first_line.strip_prefix("%%") {
            let name = magic.split_whitespace().next().unwrap_or("");
            let whole_cell = !PYTHON_CELL_MAGICS.contains(&name);
            let end = if whole_cell { cell.len() } else { first.end };
            blank(&mut output, 0..end, None);
            neutralised.push(0..end);
            if whole_cell {
                return (output, neutralised);
            }
        }
    }
    let mut lexer = LineLexer::default();
    let mut continues_magic = false;
    // A `%%time` line is already blanked.
    let skip = usize::from(!neutralised.is_empty());
    for line in lines.iter().skip(skip) {
        let text = &cell[line.clone()];
        let starts_statement = lexer.at_statement_start();
        lexer.scan(text);
        let is_magic = continues_magic || (starts_statement && is_ipython_line(text));
        if is_magic {
            let indent = text.len() - text.trim_start().len();
            // Inside a block a blank line would leave the block without a body: a placeholder
            // expression statement (`...` or `0`) keeps it a statement, as IPython's rewrite
            // into a function call does.
            let placeholder = (indent > 0 && !continues_magic).then_some(indent);
            let content_end = line.start + text.trim_end_matches(['\r', '\n']).len();
            blank(&mut output, line.start..content_end, placeholder);
            neutralised.push(line.start..content_end);
            continues_magic = text.trim_end().ends_with('\\');
            lexer.reset_line_state();
        } else {
            continues_magic = false;
        }
    }
    (output, neutralised)
}

/// Byte ranges of the lines of `text`, each including its line break.
fn line_ranges(text: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    for (index, byte) in text.bytes().enumerate() {
        if byte == b'\n' {
            ranges.push(start..index + 1);
            start = index + 1;
        }
    }
    if start < text.len() {
        ranges.push(start..text.len());
    }
    ranges
}

/// Replaces every character of `range` except line breaks with spaces (as many as its UTF-8
/// bytes); with `placeholder = Some(indent)`, keeps the indentation and puts an expression
/// statement after it.
fn blank(output: &mut String, range: Range<usize>, placeholder: Option<usize>) {
    let mut replacement: String = output[range.clone()]
        .chars()
        .map(|character| match character {
            '\n' | '\r' => character.to_string(),
            other => " ".repeat(other.len_utf8()),
        })
        .collect();
    if let Some(indent) = placeholder {
        let original = &output[range.clone()];
        let room = range.len() - indent;
        let statement = if room >= 3 { "..." } else { "0" };
        replacement.replace_range(indent..indent + statement.len(), statement);
        replacement.replace_range(..indent, &original[..indent]);
    }
    output.replace_range(range, &replacement);
}

/// Whether a line that starts a statement is IPython syntax: a line magic (`%timeit f()`), a
/// shell escape (`!pip install x`), help (`?obj`, `obj?`, `obj??`), or an assignment from one of
/// these (`files = !ls`). None of these is valid Python.
fn is_ipython_line(line: &str) -> bool {
    let trimmed = line.trim();
    if trimmed.starts_with(['%', '!', '?']) {
        return true;
    }
    if let Some(subject) = trimmed.strip_suffix('?') {
        let subject = subject.strip_suffix('?').unwrap_or(subject);
        return !subject.is_empty()
            && subject
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    }
    if let Some(equals) = trimmed.find('=') {
        let (targets, rest) = trimmed.split_at(equals);
        let value = rest[1..].trim_start();
        return !targets.trim().is_empty()
            && targets
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == ',' || c == ' ')
            && !rest[1..].starts_with('=')
            && value.starts_with(['%', '!']);
    }
    false
}

/// Just enough of Python's lexer to know whether a line starts a new statement: not inside a
/// triple-quoted string, not inside brackets, not after a backslash continuation.
#[derive(Default)]
struct LineLexer {
    /// The quote of the triple-quoted string we are inside.
    triple_quote: Option<char>,
    bracket_depth: usize,
    backslash_continuation: bool,
}

impl LineLexer {
    fn at_statement_start(&self) -> bool {
        self.triple_quote.is_none() && self.bracket_depth == 0 && !self.backslash_continuation
    }

    fn reset_line_state(&mut self) {
        self.bracket_depth = 0;
        self.backslash_continuation = false;
    }

    fn scan(&mut self, line: &str) {
        let characters: Vec<char> = line.chars().collect();
        let mut index = 0;
        self.backslash_continuation = false;
        while index < characters.len() {
            let character = characters[index];
            if let Some(quote) = self.triple_quote {
                if character == '\\' {
                    index += 2;
                    continue;
                }
                if characters[index..].starts_with(&[quote, quote, quote]) {
                    self.triple_quote = None;
                    index += 3;
                    continue;
                }
                index += 1;
                continue;
            }
            match character {
                '#' => break,
                '(' | '[' | '{' => self.bracket_depth += 1,
                ')' | ']' | '}' => self.bracket_depth = self.bracket_depth.saturating_sub(1),
                '\\' if characters[index + 1..]
                    .iter()
                    .all(|c| *c == '\n' || *c == '\r') =>
                {
                    self.backslash_continuation = true;
                }
                '"' | '\'' => {
                    if characters[index..].starts_with(&[character, character, character]) {
                        self.triple_quote = Some(character);
                        index += 3;
                        continue;
                    }
                    // A one-line string: skip to its closing quote (or the end of the line).
                    index += 1;
                    while index < characters.len() && characters[index] != character {
                        if characters[index] == '\\' {
                            index += 1;
                        }
                        index += 1;
                    }
                }
                _ => {}
            }
            index += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpulint_analyzer::fix::count_errors;
    use tpulint_analyzer::syntax;

    #[test]
    fn magics_become_whitespace_of_the_same_length() {
        let cell =
            "%matplotlib inline\n!pip install x\nfiles = !ls -la\nimport torch\ntorch.ones?\n";
        let (neutral, ranges) = neutralise_ipython(cell);
        assert_eq!(neutral.len(), cell.len());
        assert_eq!(
            neutral,
            "                  \n              \n               \nimport torch\n           \n"
        );
        assert_eq!(ranges.len(), 4);
    }

    #[test]
    fn strings_brackets_and_operators_are_left_alone() {
        let cell = "x = (a\n% b)\ndoc = \"\"\"\n%not a magic\n\"\"\"\ny = a != b\ns = '%s' % x\n";
        let (neutral, ranges) = neutralise_ipython(cell);
        assert_eq!(neutral, cell);
        assert!(ranges.is_empty());
    }

    #[test]
    fn a_magic_inside_a_block_keeps_the_block_valid() {
        let cell = "for i in range(3):\n    %time f(i)\n";
        let (neutral, _) = neutralise_ipython(cell);
        assert_eq!(neutral, "for i in range(3):\n    ...       \n");
        let tree = syntax::parse(&neutral, None).expect("parses");
        assert_eq!(count_errors(&tree), 0);
    }

    #[test]
    fn cell_magics_blank_the_cell_unless_its_body_is_python() {
        let (neutral, _) = neutralise_ipython("%%bash\necho hi\n");
        assert_eq!(neutral.trim(), "");
        let (neutral, _) = neutralise_ipython("%%time\nx = 1\n");
        assert_eq!(neutral, "      \nx = 1\n");
    }

    #[test]
    fn a_continued_shell_line_is_blanked_whole() {
        let (neutral, _) = neutralise_ipython("!pip install \\\n   torch\nx = 1\n");
        assert_eq!(neutral, "              \n        \nx = 1\n");
    }
}
