//! A map keyed by URI: a `Vec` kept sorted by the URI's text. An editor holds tens of documents,
//! so a binary search is as fast as hashing; iteration is in URI order (stable listings without a
//! sort), and each value type costs the WebAssembly module one small instance instead of a hash
//! table's.

use ls_types::Uri;

#[derive(Debug, Clone)]
pub struct UriMap<V> {
    entries: Vec<(Uri, V)>,
}

impl<V> Default for UriMap<V> {
    fn default() -> Self {
        UriMap {
            entries: Vec::new(),
        }
    }
}

impl<V> UriMap<V> {
    pub fn new() -> UriMap<V> {
        UriMap::default()
    }

    fn position(&self, uri: &Uri) -> Result<usize, usize> {
        self.entries
            .binary_search_by(|(key, _)| key.as_str().cmp(uri.as_str()))
    }

    pub fn get(&self, uri: &Uri) -> Option<&V> {
        let index = self.position(uri).ok()?;
        Some(&self.entries[index].1)
    }

    pub fn get_mut(&mut self, uri: &Uri) -> Option<&mut V> {
        let index = self.position(uri).ok()?;
        Some(&mut self.entries[index].1)
    }

    pub fn contains_key(&self, uri: &Uri) -> bool {
        self.position(uri).is_ok()
    }

    /// Inserts or replaces; returns the value replaced.
    pub fn insert(&mut self, uri: Uri, value: V) -> Option<V> {
        match self.position(&uri) {
            Ok(index) => Some(std::mem::replace(&mut self.entries[index].1, value)),
            Err(index) => {
                self.entries.insert(index, (uri, value));
                None
            }
        }
    }

    pub fn remove(&mut self, uri: &Uri) -> Option<V> {
        let index = self.position(uri).ok()?;
        Some(self.entries.remove(index).1)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in URI order.
    pub fn iter(&self) -> impl Iterator<Item = (&Uri, &V)> {
        self.entries.iter().map(|(uri, value)| (uri, value))
    }

    /// The URIs in order.
    pub fn keys(&self) -> impl Iterator<Item = &Uri> {
        self.entries.iter().map(|(uri, _)| uri)
    }

    pub fn into_keys(self) -> impl Iterator<Item = Uri> {
        self.entries.into_iter().map(|(uri, _)| uri)
    }
}

impl<V> FromIterator<(Uri, V)> for UriMap<V> {
    fn from_iter<I: IntoIterator<Item = (Uri, V)>>(items: I) -> Self {
        let mut map = UriMap::new();
        for (uri, value) in items {
            map.insert(uri, value);
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    #[test]
    fn behaves_as_a_map_in_uri_order() {
        let uri = |text: &str| Uri::from_str(text).unwrap();
        let mut map = UriMap::new();
        assert_eq!(map.insert(uri("file:///b.py"), 2), None);
        assert_eq!(map.insert(uri("file:///a.py"), 1), None);
        assert_eq!(map.insert(uri("file:///b.py"), 3), Some(2));
        assert_eq!(map.get(&uri("file:///b.py")), Some(&3));
        *map.get_mut(&uri("file:///a.py")).unwrap() += 10;
        let keys: Vec<&str> = map.keys().map(|uri| uri.as_str()).collect();
        assert_eq!(keys, ["file:///a.py", "file:///b.py"]);
        assert_eq!(map.remove(&uri("file:///a.py")), Some(11));
        assert!(!map.contains_key(&uri("file:///a.py")));
        assert_eq!(map.len(), 1);
    }
}
