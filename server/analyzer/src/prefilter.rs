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

/// Calls `found` with the number of each declared word in `bytes` (once per occurrence).
fn for_each_declared_word(bytes: &[u8], mut found: impl FnMut(usize)) {
    let vocabulary = &*VOCABULARY;
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
            found(number);
        }
    }
}

/// How often each declared word occurs in one text: what an incremental check keeps so that
/// after an edit only the changed bytes are scanned again ([`TokenCounts::edited`]), not the
/// whole text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenCounts {
    counts: Vec<u32>,
}

impl TokenCounts {
    /// Scans `source` once.
    pub fn of(source: &str) -> TokenCounts {
        let mut counts = TokenCounts {
            counts: vec![0; VOCABULARY.index.len()],
        };
        counts.add(source.as_bytes(), true);
        counts
    }

    fn add(&mut self, bytes: &[u8], add: bool) {
        let counts = &mut self.counts;
        for_each_declared_word(bytes, |number| {
            if let Some(count) = counts.get_mut(number) {
                *count = if add {
                    count.saturating_add(1)
                } else {
                    count.saturating_sub(1)
                };
            }
        });
    }

    /// The counts of `new`, from these (the counts of `old`) and the changed bytes
    /// (`old[..prefix]` and `old[old_end..]` unchanged, the new text `delta` bytes longer): the
    /// change widened to whole words (a word byte before or after it continues a word it
    /// changed), the old words there taken out and the new ones added. Outside the widened span
    /// the two texts hold the same words, each ended by the same bytes.
    pub fn edited(
        &self,
        old: &str,
        new: &str,
        (prefix, old_end, delta): (usize, usize, isize),
    ) -> TokenCounts {
        let (old_bytes, new_bytes) = (old.as_bytes(), new.as_bytes());
        let mut start = prefix.min(old_bytes.len());
        while start > 0 && WORD_BYTES[old_bytes[start - 1] as usize] {
            start -= 1;
        }
        let mut end = old_end.clamp(start, old_bytes.len());
        while end < old_bytes.len() && WORD_BYTES[old_bytes[end] as usize] {
            end += 1;
        }
        let new_end = usize::try_from(end as isize + delta)
            .unwrap_or(0)
            .clamp(start.min(new_bytes.len()), new_bytes.len());
        let mut counts = self.clone();
        counts.add(&old_bytes[start..end], false);
        counts.add(&new_bytes[start.min(new_bytes.len())..new_end], true);
        counts
    }

    /// The words that occur.
    pub fn present(&self) -> PresentTokens {
        let mut bits = vec![0u64; self.counts.len().div_ceil(64)];
        for (number, _) in self
            .counts
            .iter()
            .enumerate()
            .filter(|(_, count)| **count > 0)
        {
            bits[number / 64] |= 1 << (number % 64);
        }
        PresentTokens { bits }
    }
}

impl PresentTokens {
    /// Scans `source` once.
    pub fn of(source: &str) -> PresentTokens {
        let mut bits = vec![0u64; VOCABULARY.index.len().div_ceil(64)];
        for_each_declared_word(source.as_bytes(), |number| {
            bits[number / 64] |= 1 << (number % 64);
        });
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

    /// After any edit, the counts from the old text's counts and the changed bytes are the
    /// counts of the new text: words split, joined, grown or cut by the edit, at its edges, at
    /// the text's ends.
    #[test]
    fn edited_counts_are_the_counts_of_the_new_text() {
        let pieces = [
            "item", "ITEM", "items", "cuda", "x", ".", " ", "_", "\n", "é", "9", "()",
        ];
        let mut next = crate::test_random(0x9e37_79b9_7f4a_7c15_u64);
        let mut compared = 0;
        for _ in 0..3_000 {
            let old: String = (0..12).map(|_| pieces[next(pieces.len())]).collect();
            let inserted: String = (0..3).map(|_| pieces[next(pieces.len())]).collect();
            let boundaries: Vec<usize> = (0..=old.len())
                .filter(|&at| old.is_char_boundary(at))
                .collect();
            let (mut a, mut b) = (
                boundaries[next(boundaries.len())],
                boundaries[next(boundaries.len())],
            );
            if a > b {
                (a, b) = (b, a);
            }
            let inserted = &inserted[..inserted.len() * next(2)];
            let new = format!("{}{inserted}{}", &old[..a], &old[b..]);
            let delta = new.len() as isize - old.len() as isize;
            let edited = TokenCounts::of(&old).edited(&old, &new, (a, b, delta));
            assert_eq!(edited, TokenCounts::of(&new), "{old:?} -> {new:?}");
            assert_eq!(edited.present().bits, PresentTokens::of(&new).bits);
            compared += usize::from(TokenCounts::of(&old) != edited);
        }
        assert!(compared > 100, "{compared} edits changed a count");
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
