//! One stable sort for every caller in the engine: items are ordered by a key of one fixed type,
//! so the standard library's sort is instantiated once instead of once per call site (each
//! instance costs the WebAssembly module about 4 KB; see `docs/benchmarks.md`).

/// The key every sort uses, compared as a tuple.
pub type SortKey = (usize, usize, usize, &'static str);

/// Sorts `items` by `key`, keeping the order of items with equal keys.
pub fn sort_stably_by_key<T>(items: &mut [T], key: impl Fn(&T) -> SortKey) {
    if items.len() < 2 {
        return;
    }
    let mut keyed: Vec<(SortKey, usize)> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        keyed.push((key(item), index));
    }
    let order = sorted_order(keyed);
    // Moves every item to its place by following the permutation's cycles (only swaps are
    // generic over `T`: each caller's instance stays small).
    let mut placed = vec![false; order.len()];
    for start in 0..order.len() {
        let mut current = start;
        while !placed[current] {
            placed[current] = true;
            let next = order[current];
            if next == start {
                break;
            }
            items.swap(current, next);
            current = next;
        }
    }
}

/// The indices of `keyed` in key order: `order[i]` is the index of the item that goes to `i`.
#[inline(never)]
fn sorted_order(mut keyed: Vec<(SortKey, usize)>) -> Vec<usize> {
    // The index makes every key unique, so the unstable sort is stable here.
    keyed.sort_unstable();
    let mut order = Vec::with_capacity(keyed.len());
    for (_, index) in keyed {
        order.push(index);
    }
    order
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
