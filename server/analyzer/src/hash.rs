//! The engine's hash maps and sets, on a fast non-cryptographic hasher (the multiply-rotate
//! hash rustc and ruff use). The keys are node ids and names from the file being checked; SipHash's
//! resistance to chosen collisions buys nothing here and costs time on every lookup, and its
//! rounds, inlined into every map operation, cost the WebAssembly module room.

use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`WordHasher`]; create one with `HashMap::default()`.
pub type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<WordHasher>>;

/// Multiply-rotate hashing over machine words.
#[derive(Default, Clone, Copy)]
pub struct WordHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl WordHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }
}

/// A key for a top-level statement's text (and the `kind` and `flag` it is read with), for the
/// incremental pre-pass's caches: [`WordHasher`] over the text (eight bytes per step, several
/// times SipHash's speed on a whole module per keystroke), with the length and a final
/// avalanche so that nearby texts land far apart.
pub(crate) fn text_key(kind: u16, text: &str, flag: bool) -> u64 {
    let mut hasher = WordHasher::default();
    hasher.write(text.as_bytes());
    hasher.write_u64(text.len() as u64);
    hasher.write_u64(u64::from(kind) << 1 | u64::from(flag));
    // splitmix64's finaliser.
    let mut z = hasher.finish();
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A 64-bit digest of `value` for equality tests across checks (incremental checking compares
/// pre-pass digests, statement texts and names by it): [`WordHasher`] with every byte string's
/// length mixed in (so that `"ab"` and `"ab\0"` differ) and splitmix64's finaliser. Replaces
/// SipHash (`DefaultHasher`) there: as good for texts nobody crafts against it, and SipHash's
/// rounds cost the WebAssembly module room.
pub(crate) fn digest(value: impl std::hash::Hash) -> u64 {
    let mut hasher = DigestHasher::default();
    value.hash(&mut hasher);
    hasher.finish()
}

/// The hasher of [`digest`]; usable to hash several values into one digest.
#[derive(Default, Clone, Copy)]
pub(crate) struct DigestHasher(WordHasher);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0.finish();
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
        self.0.write_usize(bytes.len());
    }

    fn write_u8(&mut self, value: u8) {
        self.0.write_u8(value);
    }

    fn write_u32(&mut self, value: u32) {
        self.0.write_u32(value);
    }

    fn write_u64(&mut self, value: u64) {
        self.0.write_u64(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.0.write_usize(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_work_and_distinct_keys_hash_apart() {
        let mut map: HashMap<String, usize> = HashMap::default();
        for index in 0..1000 {
            map.insert(format!("name_{index}"), index);
        }
        assert_eq!(map.len(), 1000);
        assert_eq!(map.get("name_517"), Some(&517));
        let hash = |text: &str| {
            let mut hasher = WordHasher::default();
            hasher.write(text.as_bytes());
            hasher.finish()
        };
        assert_ne!(hash("abcdefgh1"), hash("abcdefgh2"));
        assert_ne!(hash("a"), hash("b"));
    }
}

/// A set of 64-bit keys (node keys, name hashes) kept in a `HashMap<u64, usize>` (the engine's
/// most used map type) rather than a `HashSet<u64>`, whose own table code would cost the
/// WebAssembly module room.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct KeySet(HashMap<u64, usize>);

impl KeySet {
    /// Adds `key`; whether it was not there.
    pub fn insert(&mut self, key: u64) -> bool {
        self.0.insert(key, 0).is_none()
    }

    pub fn contains(&self, key: &u64) -> bool {
        self.0.contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &u64> {
        self.0.keys()
    }

    pub fn drain(&mut self) -> impl Iterator<Item = u64> + '_ {
        self.0.drain().map(|(key, _)| key)
    }
}

impl Extend<u64> for KeySet {
    fn extend<I: IntoIterator<Item = u64>>(&mut self, keys: I) {
        for key in keys {
            self.insert(key);
        }
    }
}

impl FromIterator<u64> for KeySet {
    fn from_iter<I: IntoIterator<Item = u64>>(keys: I) -> Self {
        let mut set = KeySet::default();
        set.extend(keys);
        set
    }
}

impl IntoIterator for KeySet {
    type Item = u64;
    type IntoIter = std::collections::hash_map::IntoKeys<u64, usize>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_keys()
    }
}

impl<'a> IntoIterator for &'a KeySet {
    type Item = &'a u64;
    type IntoIter = std::collections::hash_map::Keys<'a, u64, usize>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.keys()
    }
}

/// A set of names kept in a list, found by [`digest`] positions in a `HashMap<u64, usize>` (the
/// engine's most used map type) rather than a `HashSet<String>`, whose own table code would cost
/// the WebAssembly module room. Exact: a position found is checked against the name, and two
/// names of one hash fall back to a scan. Equality ignores order, as a hash set's does.
#[derive(Debug, Default, Clone)]
pub struct StringSet {
    names: Vec<String>,
    positions: HashMap<u64, usize>,
}

impl StringSet {
    /// Whether `name`, whose hash is `hash`, is there; and whether a name of that hash is.
    fn find(&self, name: &str, hash: u64) -> (bool, bool) {
        match self.positions.get(&hash) {
            Some(&first) => (
                self.names[first] == name || self.names.iter().any(|other| other == name),
                true,
            ),
            None => (false, false),
        }
    }

    /// Adds `name`; whether it was not there.
    pub fn insert(&mut self, name: String) -> bool {
        let hash = digest(name.as_str());
        match self.find(&name, hash) {
            (true, _) => false,
            (false, hash_known) => {
                if !hash_known {
                    self.positions.insert(hash, self.names.len());
                }
                self.names.push(name);
                true
            }
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.find(name, digest(name)).0
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, String> {
        self.names.iter()
    }

    /// Keeps the names for which `keep` holds.
    pub fn retain(&mut self, keep: impl FnMut(&String) -> bool) {
        self.names.retain(keep);
        self.positions = HashMap::default();
        for (index, name) in self.names.iter().enumerate() {
            self.positions.entry(digest(name.as_str())).or_insert(index);
        }
    }
}

impl PartialEq for StringSet {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.names.iter().all(|name| other.contains(name))
    }
}

impl Eq for StringSet {}

impl Extend<String> for StringSet {
    fn extend<I: IntoIterator<Item = String>>(&mut self, names: I) {
        for name in names {
            self.insert(name);
        }
    }
}

impl FromIterator<String> for StringSet {
    fn from_iter<I: IntoIterator<Item = String>>(names: I) -> Self {
        let mut set = StringSet::default();
        set.extend(names);
        set
    }
}

impl IntoIterator for StringSet {
    type Item = String;
    type IntoIter = std::vec::IntoIter<String>;

    fn into_iter(self) -> Self::IntoIter {
        self.names.into_iter()
    }
}

impl<'a> IntoIterator for &'a StringSet {
    type Item = &'a String;
    type IntoIter = std::slice::Iter<'a, String>;

    fn into_iter(self) -> Self::IntoIter {
        self.names.iter()
    }
}
