//! The global allocator: mimalloc, asked the way its C callers ask it.
//!
//! The `mimalloc` crate's allocator asks for every block through
//! `mi_malloc_aligned`, whatever the alignment. mimalloc 3 serves an
//! aligned request over 1 KiB whose size is not a power of two by
//! over-allocating and offsetting, even for an alignment of 8 that every
//! block has: about 13 of a call's 40 allocations (its boxed futures, the
//! channels' blocks) went that way (BENCHMARKS.md, section 1). Here a
//! request needing no more than a word's alignment, which every mimalloc
//! block has, goes to `mi_malloc`; only a larger alignment goes to the
//! aligned functions.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

/// Every mimalloc block is aligned to a word at least (its smallest block
/// is a word).
const WORD: usize = std::mem::size_of::<usize>();

pub(crate) struct Mimalloc;

/// A mimalloc allocation function taking a size; its aligned counterpart.
type Plain = unsafe extern "C" fn(usize) -> *mut c_void;
type Aligned = unsafe extern "C" fn(usize, usize) -> *mut c_void;

/// Allocates for `layout` with `plain` when a word's alignment is enough,
/// with `aligned` otherwise.
///
/// # Safety
///
/// As [`GlobalAlloc::alloc`]: `layout` has a non-zero size.
#[inline]
unsafe fn by_alignment(layout: Layout, plain: Plain, aligned: Aligned) -> *mut u8 {
    // SAFETY: mimalloc's functions take any size and a power-of-two
    // alignment, which a `Layout` has.
    unsafe {
        if layout.align() <= WORD {
            plain(layout.size()).cast()
        } else {
            aligned(layout.size(), layout.align()).cast()
        }
    }
}

// SAFETY: each function hands the request to mimalloc with an alignment at
// least the layout's: a word for what needs no more, the layout's own
// otherwise; `mi_free` takes a block from any of them.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for the impl.
        unsafe { by_alignment(layout, mi_malloc, mi_malloc_aligned) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for the impl.
        unsafe { by_alignment(layout, mi_zalloc, mi_zalloc_aligned) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc.
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for the impl; `ptr` came from this allocator.
        unsafe {
            if layout.align() <= WORD {
                mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of the sizes and alignments a program asks for come back
    /// aligned, keep what was written through a realloc, and zeroed when
    /// asked.
    #[test]
    fn blocks_are_aligned_kept_through_realloc_and_zeroed() {
        let a = Mimalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 128, 4096] {
            for size in [1, 3, 8, 24, 40, 100, 1000, 1025, 1500, 3700, 5000, 70_000] {
                let layout = Layout::from_size_align(size, align).expect("layout");
                // SAFETY: a non-zero size; each block is freed once, with
                // its layout.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xAB, size);
                    let grown = a.realloc(p, layout, size * 3);
                    assert_eq!(grown as usize % align, 0, "realloc {size} align {align}");
                    assert!((0..size).all(|i| *grown.add(i) == 0xAB));
                    a.dealloc(
                        grown,
                        Layout::from_size_align(size * 3, align).expect("layout"),
                    );
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
