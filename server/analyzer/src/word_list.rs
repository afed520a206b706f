//! A static list of words kept as one string: each word after a byte holding its length.
//!
//! `torch_api`'s tables were `&[&str]`s: in the WebAssembly module each entry was an 8-byte
//! (pointer, length) pair in the data image, which gzip cannot compress, and each `contains` an
//! inlined loop at its call site. A [`WordList`] stores the same words, in the same order, as
//! one length-prefixed string (the length bytes are below 128, so the string is valid UTF-8 and
//! every word starts and ends on a character boundary), and [`WordList::contains`] is one shared
//! function. Built at compile time by [`word_list!`] from the same literal list; the `&[&str]` it
//! is packed from is only a constant, never in the binary.

/// Words in one string, each after its length in a byte. Build with [`word_list!`].
#[derive(Clone, Copy, Debug)]
pub struct WordList {
    packed: &'static str,
}

/// The number of bytes of the packed form of `words`: one length byte per word plus its bytes.
pub const fn packed_len(words: &[&str]) -> usize {
    let mut total = 0;
    let mut index = 0;
    while index < words.len() {
        total += 1 + words[index].len();
        index += 1;
    }
    total
}

/// The packed form of `words` (`N` is [`packed_len`]): fails to compile when a word is 128 bytes
/// or longer, so that every length byte is ASCII.
pub const fn pack<const N: usize>(words: &[&str]) -> [u8; N] {
    let mut out = [0u8; N];
    let mut at = 0;
    let mut index = 0;
    while index < words.len() {
        let bytes = words[index].as_bytes();
        assert!(bytes.len() < 128, "word_list: a word of 128 bytes or more");
        out[at] = bytes.len() as u8;
        at += 1;
        let mut byte = 0;
        while byte < bytes.len() {
            out[at] = bytes[byte];
            at += 1;
            byte += 1;
        }
        index += 1;
    }
    assert!(at == N, "word_list: N is not the packed length");
    out
}

impl WordList {
    /// The list packed by [`pack`].
    pub const fn from_packed(packed: &'static [u8]) -> Self {
        match std::str::from_utf8(packed) {
            Ok(packed) => Self { packed },
            Err(_) => panic!("word_list: a word is not UTF-8"),
        }
    }

    /// Whether `word` is one of the words (the same test as `<[&str]>::contains`). Generic over
    /// what the call sites hold (`&&str`, `&String`), so that they read as a slice's would.
    #[inline]
    pub fn contains<W: AsRef<str> + ?Sized>(&self, word: &W) -> bool {
        self.contains_word(word.as_ref())
    }

    // Not inlined: one copy of the loop for every table and call site (the module's size).
    #[inline(never)]
    fn contains_word(&self, word: &str) -> bool {
        let (packed, word) = (self.packed.as_bytes(), word.as_bytes());
        let mut at = 0;
        while let Some(&length) = packed.get(at) {
            let start = at + 1;
            let end = start + length as usize;
            if length as usize == word.len() && packed.get(start..end) == Some(word) {
                return true;
            }
            at = end;
        }
        false
    }

    /// The words, in the order they were listed.
    pub fn iter(&self) -> Words {
        Words { rest: self.packed }
    }
}

/// The iterator of [`WordList::iter`].
#[derive(Clone, Debug)]
pub struct Words {
    rest: &'static str,
}

impl Iterator for Words {
    type Item = &'static str;

    fn next(&mut self) -> Option<&'static str> {
        let length = *self.rest.as_bytes().first()? as usize;
        let word = self.rest.get(1..1 + length)?;
        self.rest = &self.rest[1 + length..];
        Some(word)
    }
}

/// A [`WordList`] of string literals, written like a slice: `word_list!["rand", "randn"]`.
macro_rules! word_list {
    ($($word:expr),* $(,)?) => {{
        const WORDS: &[&str] = &[$($word),*];
        const PACKED: [u8; $crate::word_list::packed_len(WORDS)] = $crate::word_list::pack(WORDS);
        $crate::word_list::WordList::from_packed(&PACKED)
    }};
}
pub(crate) use word_list;

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: WordList = word_list!["rand", "randn", "", "torch.nn.Module", "é"];

    #[test]
    fn contains_exactly_the_listed_words() {
        for word in ["rand", "randn", "", "torch.nn.Module", "é"] {
            assert!(LIST.contains(&word), "{word}");
        }
        for word in ["ran", "randint", "randn ", "torch.nn", "e", "\u{4}rand"] {
            assert!(!LIST.contains(&word), "{word}");
        }
        assert!(LIST.contains(&String::from("randn")));
        assert!(!word_list![].contains(&""));
    }

    #[test]
    fn iterates_in_order() {
        let words: Vec<&str> = LIST.iter().collect();
        assert_eq!(words, ["rand", "randn", "", "torch.nn.Module", "é"]);
        assert_eq!(word_list![].iter().count(), 0);
    }
}
