//! The token prefilter: which rules can report on a file, decided from the file's words before
//! any analysis.
//!
//! Each rule declares in its registry entry ([`RuleMeta::tokens`]) the words it cannot report
//! without: `item` for `.item()`, `cuda` for CUDA device strings. One pass over the text finds
//! which declared words occur as whole words (maximal runs of ASCII letters, digits and `_`,
//! compared ignoring ASCII case, so the test is never stricter than the rules' own matching).
//! The checker then dispatches no rule whose words are all absent, and analyses nothing (no
//! semantic index, no traversal) when no enabled rule can report; syntax errors are still
//! reported, so the result is always that of a full check. A rule that declares no word always
//! runs. `tests/prefilter.rs` checks on every fixture and realistic file that removing a rule's
//! words removes its findings, and that results with and without the prefilter are identical.

use std::sync::LazyLock;

use crate::hash::HashMap;
use crate::registry::{RuleId, rules};
use crate::semantic::name_hash;

/// Whether the checker consults the prefilter and the callee filter ([`RuleMeta::calls`]: a
/// `call` rule runs only on the calls it declares). Anything but `On` only to compare against
/// them in tests and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefilter {
    /// Both filters.
    On,
    /// Neither: every enabled rule sees every node of its kinds.
    Off,
    /// The token prefilter only: every running `call` rule sees every call.
    TokensOnly,
}

/// Every declared word, lowercased, numbered; and each rule's words by number.
struct Vocabulary {
    /// By the word's [`name_hash`]: a map type the index already has (one hash-map type fewer
    /// in the WebAssembly module than a `Vec<u8>` key). Two words of one hash would share a
    /// number, which can only let a rule run on a file it finds nothing in, never hide a finding.
    index: HashMap<u64, usize>,
    /// For each lowercased first byte, bit `n` is set when a word of length `n` (< 64) starts with
    /// it: most words of a file (`self`, `x`, `return`) are rejected without hashing.
    shapes: [u64; 256],
    /// Indexed by [`RuleId`].
    rule_words: Vec<Vec<u16>>,
}

static VOCABULARY: LazyLock<Vocabulary> = LazyLock::new(|| {
    let mut index: HashMap<u64, usize> = HashMap::default();
    let mut shapes = [0u64; 256];
    let rule_words = rules()
        .iter()
        .map(|rule| {
            rule.tokens
                .iter()
                .map(|token| {
                    let word = token.to_ascii_lowercase();
                    if let Some(first) = word.as_bytes().first()
                        && word.len() < 64
                    {
                        shapes[*first as usize] |= 1 << word.len();
                    }
                    let key = name_hash(&word);
                    let number = match index.get(&key) {
                        Some(number) => *number,
                        None => {
                            let next = index.len();
                            index.insert(key, next);
                            next
                        }
                    };
                    number as u16
                })
                .collect()
        })
        .collect();
    Vocabulary {
        index,
        shapes,
        rule_words,
    }
});

const fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// [`is_word_byte`] of every byte: the scan asks it of every byte of every file, and a table
/// read is cheaper than the comparisons.
static WORD_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = is_word_byte(byte as u8);
        byte += 1;
    }
    table
};

/// Whether `token` can ever be found: a non-empty run of word bytes, shorter than 64 bytes.
pub fn is_valid_token(token: &str) -> bool {
    !token.is_empty() && token.len() < 64 && token.bytes().all(is_word_byte)
}

/// The declared words that occur in one file.
#[derive(Debug, Clone)]
pub struct PresentTokens {
    bits: Vec<u64>,
}

impl PresentTokens {
    /// Scans `source` once.
    pub fn of(source: &str) -> PresentTokens {
        let vocabulary = &*VOCABULARY;
        let mut bits = vec![0u64; vocabulary.index.len().div_ceil(64)];
        let bytes = source.as_bytes();
        let mut buffer = [0u8; 64];
        let mut position = 0;
        while position < bytes.len() {
            if !WORD_BYTES[bytes[position] as usize] {
                position += 1;
                continue;
            }
            let start = position;
            position += bytes[start..]
                .iter()
                .position(|byte| !WORD_BYTES[*byte as usize])
                .unwrap_or(bytes.len() - start);
            let word = &bytes[start..position];
            if word.len() >= buffer.len()
                || vocabulary.shapes[word[0].to_ascii_lowercase() as usize] & (1 << word.len()) == 0
            {
                continue;
            }
            let lowered = &mut buffer[..word.len()];
            lowered.copy_from_slice(word);
            lowered.make_ascii_lowercase();
            // Word bytes are ASCII, so always UTF-8.
            if let Ok(lowered) = std::str::from_utf8(lowered)
                && let Some(&number) = vocabulary.index.get(&name_hash(lowered))
            {
                bits[number / 64] |= 1 << (number % 64);
            }
        }
        PresentTokens { bits }
    }

    fn contains(&self, number: u16) -> bool {
        self.bits
            .get(number as usize / 64)
            .is_some_and(|word| word & (1 << (number % 64)) != 0)
    }

    /// Whether the rule may report on the file: it declares no word, or one of its words occurs.
    pub fn may_report(&self, rule: RuleId) -> bool {
        match VOCABULARY.rule_words.get(rule.0 as usize) {
            Some(words) => words.is_empty() || words.iter().any(|number| self.contains(*number)),
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::rule_by_code_or_name;

    #[test]
    fn every_declared_token_is_a_findable_word() {
        for rule in rules() {
            for token in rule.tokens {
                assert!(
                    is_valid_token(token),
                    "{}: token {token:?} is not a run of ASCII letters, digits and `_` shorter than 64 bytes",
                    rule.code
                );
            }
        }
    }

    #[test]
    fn words_are_whole_and_case_is_ignored() {
        let item = rule_by_code_or_name("TPU101").unwrap();
        assert!(PresentTokens::of("x.item()").may_report(item));
        assert!(PresentTokens::of("x.ITEM()").may_report(item));
        assert!(PresentTokens::of("é.item()").may_report(item));
        assert!(!PresentTokens::of("x.items()").may_report(item));
        assert!(!PresentTokens::of("x.item_count").may_report(item));
        assert!(!PresentTokens::of("").may_report(item));
        let long = "a".repeat(100_000);
        assert!(!PresentTokens::of(&long).may_report(item));
    }

    #[test]
    fn a_rule_without_tokens_always_runs() {
        for (index, rule) in rules().iter().enumerate() {
            if rule.tokens.is_empty() {
                assert!(PresentTokens::of("").may_report(RuleId(index as u16)));
            }
        }
    }
}
