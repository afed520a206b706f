//! The WebAssembly module's memory allocator: power-of-two size classes with one free list each.
//!
//! It replaces the standard library's dlmalloc, which is about 5.6 KB of code before `wasm-opt`
//! (about 1.5 KB of the module gzipped, see docs/benchmarks.md, "Back within 300,000 B again"),
//! for a module whose size is budgeted. What it gives up is dlmalloc's economy of memory: a block
//! is its request rounded up to a power of two (at most twice the request), and a freed block is
//! only reused for a request of the same class, never split or merged. The module checks one
//! document at a time, and the engine's allocations (nodes' vectors, strings, tree-sitter's
//! stacks and subtrees) come back in the same few classes check after check, so the free lists
//! reach a steady size. Every operation is constant time.
//!
//! Memory comes from `memory.grow`, a megabyte or more at a time, carved from the front. The
//! module has one thread (`wasm32-unknown-unknown` without the `atomics` feature), so the state
//! needs no lock; the allocator never allocates, so it is never re-entered.
#![allow(unsafe_code)]

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr;

/// The smallest block, 2^4 bytes: room for the free list's link, and every alignment the
/// engine's types need.
const MIN_CLASS: usize = 4;
/// Classes 0..32: a block of class `k` is 2^k bytes (below `MIN_CLASS` unused).
const CLASSES: usize = usize::BITS as usize;
const PAGE: usize = 65_536;
/// The least memory asked of `memory.grow` at once (1 MiB), so that growing is rare.
const MIN_GROW_PAGES: usize = 16;

struct State {
    /// The first free block of each class; each free block starts with the next one's address.
    free: [*mut u8; CLASSES],
    /// The unused region `next..end` that new blocks are carved from.
    next: usize,
    end: usize,
}

pub struct SizeClassAllocator(UnsafeCell<State>);

// SAFETY: the module runs on one thread (the global allocator is only installed without the
// `atomics` target feature), so the state is never accessed concurrently.
unsafe impl Sync for SizeClassAllocator {}

impl SizeClassAllocator {
    pub const fn new() -> Self {
        SizeClassAllocator(UnsafeCell::new(State {
            free: [ptr::null_mut(); CLASSES],
            next: 0,
            end: 0,
        }))
    }
}

impl Default for SizeClassAllocator {
    fn default() -> Self {
        Self::new()
    }
}

/// The class of a block that holds `size` bytes at `align`: the least `k` with 2^k >= both
/// (an alignment is a power of two, so a block of 2^k bytes carved at a multiple of 2^k, or of
/// 16, satisfies it as long as the alignment is at most 16 or the block was carved for it).
fn class_of(size: usize, align: usize) -> usize {
    let bytes = size.max(align).max(1 << MIN_CLASS);
    (usize::BITS - (bytes - 1).leading_zeros()) as usize
}

impl State {
    /// A fresh block of class `class` aligned to `align`, carved from the unused region (grown
    /// when too small); null when memory cannot grow.
    fn carve(&mut self, class: usize, align: usize) -> *mut u8 {
        let size = 1usize << class;
        let align = align.max(1 << MIN_CLASS);
        loop {
            if let Some(start) = self
                .next
                .checked_add(align - 1)
                .map(|end| end & !(align - 1))
                && let Some(end) = start.checked_add(size)
                && end <= self.end
            {
                self.next = end;
                return start as *mut u8;
            }
            // Enough pages for the block and its alignment, and at least MIN_GROW_PAGES.
            let Some(wanted) = size.checked_add(align) else {
                return ptr::null_mut();
            };
            let pages = wanted.div_ceil(PAGE).max(MIN_GROW_PAGES);
            let previous = grow(pages);
            if previous == usize::MAX {
                return ptr::null_mut();
            }
            let start = previous.saturating_mul(PAGE);
            // Memory grown by anyone else in between leaves a gap: start afresh past it.
            if start != self.end {
                self.next = start;
            }
            self.end = start.saturating_add(pages.saturating_mul(PAGE));
        }
    }
}

/// `memory.grow` by `pages`: the previous size in pages, or `usize::MAX` when memory cannot grow.
#[cfg(target_arch = "wasm32")]
fn grow(pages: usize) -> usize {
    core::arch::wasm32::memory_grow(0, pages)
}

/// Natively the allocator is only unit-tested (its size classes), never installed.
#[cfg(not(target_arch = "wasm32"))]
fn grow(_pages: usize) -> usize {
    usize::MAX
}

// SAFETY: blocks are disjoint (carved once from memory only this allocator grows, then passed
// between the free lists and the caller), at least as large as the layout asks, and aligned as
// it asks: free-list blocks serve alignments up to 16 only, and larger alignments are carved.
unsafe impl GlobalAlloc for SizeClassAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: one thread, and no reference to the state outlives this call.
        let state = unsafe { &mut *self.0.get() };
        let class = class_of(layout.size(), layout.align());
        let head = state.free[class];
        if !head.is_null() && layout.align() <= 1 << MIN_CLASS {
            // SAFETY: a free block holds the next free block's address in its first bytes.
            state.free[class] = unsafe { head.cast::<*mut u8>().read() };
            return head;
        }
        state.carve(class, layout.align())
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: as in `alloc`; `block` was allocated with `layout`, so it holds 2^class bytes
        // (at least 16), room for the link.
        let state = unsafe { &mut *self.0.get() };
        let class = class_of(layout.size(), layout.align());
        unsafe { block.cast::<*mut u8>().write(state.free[class]) };
        state.free[class] = block;
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // The same class: the block holds the new size already. Any other class moves, shrinking
        // too: a block kept for a smaller size would be freed to that smaller class, and its
        // own class would lose it for good (wasm-bindgen shrinks every string it passes in, so
        // memory grew with each message).
        if class_of(new_size, layout.align()) == class_of(layout.size(), layout.align()) {
            return block;
        }
        // SAFETY: the caller guarantees `new_size`, rounded up to the alignment, fits an isize.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            // SAFETY: both blocks hold at least the smaller size and are disjoint.
            unsafe {
                ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                self.dealloc(block, layout);
            }
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::class_of;

    #[test]
    fn classes_are_the_least_power_of_two_that_holds_size_and_alignment() {
        assert_eq!(class_of(0, 1), 4);
        assert_eq!(class_of(1, 1), 4);
        assert_eq!(class_of(16, 8), 4);
        assert_eq!(class_of(17, 8), 5);
        assert_eq!(class_of(32, 8), 5);
        assert_eq!(class_of(33, 1), 6);
        assert_eq!(class_of(8, 64), 6);
        assert_eq!(class_of(1 << 20, 4), 20);
        assert_eq!(class_of((1 << 20) + 1, 4), 21);
    }
}
