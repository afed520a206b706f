//! One stable sort for every caller in the engine: items are ordered by a key of one fixed type,
//! so the standard library's sort is instantiated once instead of once per call site (each
//! instance costs the WebAssembly module about 4 KB; see `docs/benchmarks.md`).

/// The key every sort uses, compared as a tuple.
pub type SortKey = (usize, usize, usize, &'static str);

/// Sorts `items` by `key`, keeping the order of items with equal keys.
pub fn sort_stably_by_key<T>(items: &mut Vec<T>, key: impl Fn(&T) -> SortKey) {
    if items.len() < 2 {
        return;
    }
    let mut keyed: Vec<(SortKey, usize)> = items
        .iter()
        .enumerate()
        .map(|(index, item)| (key(item), index))
        .collect();
    // The index makes every key unique, so the unstable sort is stable here.
    keyed.sort_unstable();
    let mut slots: Vec<Option<T>> = items.drain(..).map(Some).collect();
    items.extend(
        keyed
            .into_iter()
            .filter_map(|(_, index)| slots.get_mut(index).and_then(Option::take)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_stably_like_the_standard_library() {
        let mut items: Vec<(usize, char)> = (0..200)
            .map(|i| ((i * 7919) % 13, (b'a' + (i % 26) as u8) as char))
            .collect();
        let mut expected = items.clone();
        expected.sort_by_key(|item| item.0);
        sort_stably_by_key(&mut items, |item| (item.0, 0, 0, ""));
        assert_eq!(items, expected);
        let mut empty: Vec<u8> = Vec::new();
        sort_stably_by_key(&mut empty, |_| (0, 0, 0, ""));
        assert!(empty.is_empty());
    }
}
