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
//!
//! Freed pages go back to the system [`PURGE_DELAY`] after they are
//! freed: at once, a page a busy gateway empties and fills again was
//! returned and faulted back in, over and over (1,600 `madvise` and 17,000
//! page faults a second under load, 3–9 µs of CPU per call); mimalloc's
//! own second left a catalogue's load garbage resident for as long as the
//! gateway stayed quiet, since it purges only when it runs. So the delay
//! is short, and [`purge_freed_pages`] purges when nothing else does.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;
use std::time::Duration;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

/// Every mimalloc block is aligned to a word at least (its smallest block
/// is a word).
const WORD: usize = std::mem::size_of::<usize>();

pub(crate) struct Mimalloc;

/// How long a freed page stays with the process before it is returned.
const PURGE_DELAY: Duration = Duration::from_millis(200);

/// How often the resident memory is looked at, and freed pages returned if
/// it grew: a catalogue's garbage is gone within a second of its load.
const PURGE_EVERY: Duration = Duration::from_millis(500);

/// Growth since the last purge that makes the next look purge.
const PURGE_AFTER_GROWTH: u64 = 1024 * 1024;

/// mimalloc's `mi_option_purge_delay` (the same place in its 2.x and 3.x
/// option lists; the sys crate names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Sets the purge delay; before anything is freed that should keep to it.
pub(crate) fn set_purge_delay() {
    // SAFETY: sets an option's value; mimalloc reads it at each purge.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY.as_millis() as _) };
}

/// Returns freed pages when the resident memory has grown, for ever:
/// mimalloc purges only as it allocates, which a quiet gateway does not.
/// A steady or quiet gateway is left alone (a purge costs about 100 µs).
pub(crate) async fn purge_freed_pages() {
    let mut every = tokio::time::interval(PURGE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut after_purge = resident_bytes().unwrap_or(0);
    loop {
        every.tick().await;
        let resident = resident_bytes();
        if grew(resident, after_purge) {
            purge_freed();
            after_purge = resident_bytes().unwrap_or(0);
        } else if let Some(now) = resident {
            after_purge = after_purge.min(now);
        }
    }
}

/// Whether the resident memory found (`None` where it cannot be read)
/// grew enough since the last purge, which left `after_purge`, to purge.
fn grew(resident: Option<u64>, after_purge: u64) -> bool {
    resident.is_none_or(|now| now >= after_purge.saturating_add(PURGE_AFTER_GROWTH))
}

/// The process's resident memory, where the system tells it (elsewhere,
/// every look purges).
#[cfg(target_os = "linux")]
fn resident_bytes() -> Option<u64> {
    use std::io::Read;
    // Read into the stack: `read_to_string` would stat the file and
    // allocate, twice a second for ever.
    let mut text = [0u8; 128];
    let len = std::fs::File::open("/proc/self/statm")
        .ok()?
        .read(&mut text)
        .ok()?;
    let statm = std::str::from_utf8(&text[..len]).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf reads a constant of the system.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
    Some(pages * page)
}

#[cfg(not(target_os = "linux"))]
fn resident_bytes() -> Option<u64> {
    None
}

/// Returns every freed page. Forced: an unforced pass returned nothing in
/// a process whose other threads kept allocating (the test below, run
/// with the others).
fn purge_freed() {
    // SAFETY: collects this thread's heap and purges the arenas' free
    // ranges; it frees no live block.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

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

    fn anonymous_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("RssAnon:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("RssAnon")
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_resident_memory_is_read() {
        let resident = resident_bytes().expect("statm");
        let anonymous = anonymous_kib() * 1024;
        // Other tests allocate meanwhile: room for what they may add.
        assert!(
            resident + (64 << 20) >= anonymous && resident < 1 << 40,
            "{resident} bytes resident, {anonymous} anonymous"
        );
    }

    #[test]
    fn a_purge_waits_for_a_mebibyte_of_growth() {
        let after = 13 << 20;
        assert!(!grew(Some(after), after));
        assert!(!grew(Some(after + PURGE_AFTER_GROWTH - 1), after));
        assert!(grew(Some(after + PURGE_AFTER_GROWTH), after));
        assert!(!grew(Some(after / 2), after));
        assert!(grew(None, after), "unknown memory: purge every time");
    }

    /// Freed pages stay through their delay (refilled at no cost), then go
    /// back to the system when the purge runs.
    #[cfg(target_os = "linux")]
    #[test]
    fn freed_pages_are_kept_through_their_delay_then_returned() {
        set_purge_delay();
        const MIB: u64 = 1024;
        // 64 MiB of 1 KiB blocks, each written.
        let blocks: Vec<Vec<u8>> = (0..64 * 1024).map(|_| vec![1u8; 1024]).collect();
        let held = anonymous_kib();
        drop(blocks);
        let freed = anonymous_kib();
        assert!(
            held.saturating_sub(freed) < 16 * MIB,
            "returned at once: {held} KiB held, {freed} KiB after the free"
        );
        std::thread::sleep(PURGE_DELAY + Duration::from_millis(100));
        purge_freed();
        let purged = anonymous_kib();
        assert!(
            held.saturating_sub(purged) > 32 * MIB,
            "not returned: {held} KiB held, {purged} KiB after the purge"
        );
    }

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
