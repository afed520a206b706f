//! Robustness: hostile or unusual inputs never panic, never overflow the stack, and give sensible output.

use tpulint_analyzer::{Applicability, RuleSet, Settings, check_source, fix_source};

fn all_rules() -> Settings {
    Settings {
        rules: RuleSet::from_selectors(Some(&[tpulint_analyzer::RuleSelector::All]), &[], &[]),
        ..Settings::default()
    }
}

/// Checks and fixes `source` with every rule; returns the number of diagnostics.
fn survive(source: &str) -> usize {
    let settings = all_rules();
    let diagnostics = check_source(source, &settings);
    for diagnostic in &diagnostics {
        assert!(diagnostic.range.start <= diagnostic.range.end);
        assert!(diagnostic.range.end <= source.len());
        assert!(source.is_char_boundary(diagnostic.range.start));
        assert!(source.is_char_boundary(diagnostic.range.end));
    }
    let outcome = fix_source(source, &settings, Applicability::Unsafe);
    assert!(outcome.converged);
    diagnostics.len()
}

const SAMPLE: &str = "import torch\n\nfor x, y in loader:\n    loss = model(x).sum()\n    loss.backward()\n    print(loss.item())\n    t = torch.zeros(3, device=\"cuda\")\n";

#[test]
fn empty_and_whitespace_files() {
    assert_eq!(survive(""), 0);
    assert_eq!(survive("\n\n\n"), 0);
    assert_eq!(survive("   \t  "), 0);
}

#[test]
fn random_bytes() {
    // A small deterministic xorshift generator: no dependency, same bytes every run.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for round in 0..200 {
        let len = (round * 37) % 2000;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state & 0xff) as u8
            })
            .collect();
        survive(&String::from_utf8_lossy(&bytes));
    }
}

#[test]
fn random_python_fragments() {
    let tokens = [
        "torch",
        ".",
        "item",
        "(",
        ")",
        "[",
        "]",
        "for ",
        " in ",
        "loader",
        ":",
        "\n",
        "    ",
        "if ",
        "x",
        "=",
        "\"cuda\"",
        "device",
        ",",
        "def forward(self, x)",
        "# noqa: TPU101",
        "import torch_xla",
        "'",
        "\"\"\"",
        "\\",
        "lambda",
        "**",
        "@torch.compile",
        "class A(nn.Module)",
        "\t",
    ];
    let mut state: u64 = 42;
    for _ in 0..300 {
        let mut text = String::new();
        for _ in 0..60 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            text.push_str(tokens[(state % tokens.len() as u64) as usize]);
        }
        survive(&text);
    }
}

#[test]
fn invalid_utf8_is_read_lossily() {
    let mut bytes = SAMPLE.as_bytes().to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe, 0x80, b'\n', 0xc3]);
    let text = String::from_utf8_lossy(&bytes);
    assert!(survive(&text) > 0);
}

#[test]
fn ten_megabyte_file() {
    let mut text = String::with_capacity(10 * 1024 * 1024 + SAMPLE.len());
    while text.len() < 10 * 1024 * 1024 {
        text.push_str(SAMPLE);
    }
    let diagnostics = check_source(&text, &all_rules());
    assert!(diagnostics.len() > 1000);
}

#[test]
fn deeply_nested_brackets() {
    for open in ["(", "[", "{"] {
        let close = match open {
            "(" => ")",
            "[" => "]",
            _ => "}",
        };
        let text = format!("x = {}1{}\n", open.repeat(10_000), close.repeat(10_000));
        survive(&text);
        let unbalanced = format!("x = {}1\n", open.repeat(10_000));
        survive(&unbalanced);
    }
    let calls = format!("y = {}x{}\n", "f(".repeat(5_000), ")".repeat(5_000));
    survive(&calls);
    let attributes = format!("z = a{}.item()\n", ".b".repeat(10_000));
    survive(&attributes);
    let operators = format!("w = t{}\n", " + t".repeat(10_000));
    survive(&operators);
}

#[test]
fn deeply_nested_blocks() {
    let mut text = String::from("import torch\n");
    for depth in 0..500 {
        text.push_str(&" ".repeat(depth));
        text.push_str("for x in loader:\n");
    }
    text.push_str(&" ".repeat(500));
    text.push_str("x.item()\n");
    survive(&text);
}

#[test]
fn crlf_bom_tabs_and_non_ascii() {
    let crlf = SAMPLE.replace('\n', "\r\n");
    assert_eq!(survive(&crlf), survive(SAMPLE));
    let bom = format!("\u{feff}{SAMPLE}");
    assert_eq!(survive(&bom), survive(SAMPLE));
    let tabs = SAMPLE.replace("    ", "\t");
    assert_eq!(survive(&tabs), survive(SAMPLE));
    let unicode = "import torch\n\nfor données, étiquette in loader:\n    λ = modèle(données)\n    print(λ.item(), \"😀 你好 é\")  # 🚀\n    z = torch.zeros(3, device=\"cuda\")  # ünïcödé\n";
    assert!(survive(unicode) > 0);
}
