//! The main `.wasm`'s allocator: free lists by power-of-two size class over
//! pages taken from `memory.grow`.
//!
//! # Why not the default (dlmalloc)
//! dlmalloc's `malloc`, `free`, `realloc` and chunk bookkeeping are about
//! 7 KB of code, 3 KB gzip of a module that a Worker uploads and every
//! isolate compiles. The main entry's allocations are all small and short:
//! a plan's steps, a header's value, a retry's records, a message's values
//! (the derive entry, which holds sketches and columns of 10^5 samples,
//! keeps dlmalloc). For those, a free list per size class is enough, and
//! its code is a few hundred bytes.
//!
//! # Invariants
//! 1. Every block has the size of its class, a power of two from
//!    [`MIN_BLOCK`] up, and an address aligned to [`MAX_ALIGN`] at least; a
//!    block is only ever in its own class.
//! 2. A free block's first word is the next free block of its class (0 ends
//!    the list); a block in use is never on a list.
//! 3. Memory comes from `memory.grow` and is never given back (Wasm memory
//!    cannot shrink): the heap is at most the peak of live blocks, each at
//!    most twice its request, plus the unused tail of the last page run.
//! 4. A request aligned to more than [`MAX_ALIGN`] (none in this crate) is
//!    carved fresh, aligned as asked, and joins its class's list once freed
//!    (it is aligned enough for any later request of that class).
//! 5. Single-threaded: the npm `.wasm` is built without atomics, so there
//!    is one thread and no reentrancy (nothing here calls out).
//!
//! Out of memory (`memory.grow` refused) is a null pointer, which Rust
//! turns into its allocation-failure abort, as with dlmalloc.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;

/// The smallest block: room for the free list's link and a little more.
const MIN_BLOCK: usize = 16;
/// The alignment every block gets; a request for more is carved fresh (invariant 4).
const MAX_ALIGN: usize = 16;
/// Size classes: 16 B, 32 B, … 2 GiB.
const CLASSES: usize = 28;
const PAGE: usize = 65_536;

struct State {
    /// The first free block of each class (0: none).
    free: [usize; CLASSES],
    /// The next address not yet carved, and the end of the pages taken.
    next: usize,
    end: usize,
}

pub(crate) struct SizeClasses(UnsafeCell<State>);

// Invariant 5: one thread.
unsafe impl Sync for SizeClasses {}

impl SizeClasses {
    pub(crate) const fn new() -> Self {
        Self(UnsafeCell::new(State { free: [0; CLASSES], next: 0, end: 0 }))
    }
}

/// The class of a layout: the index of its block size, `None` past 2 GiB.
fn class(layout: Layout) -> Option<usize> {
    let size = layout.size().max(layout.align()).max(MIN_BLOCK).checked_next_power_of_two()?;
    let class = (size.trailing_zeros() - MIN_BLOCK.trailing_zeros()) as usize;
    (class < CLASSES).then_some(class)
}

impl State {
    /// `size` bytes aligned to `align`, from the pages taken or new ones.
    /// 0 when memory cannot grow that far (every sum is checked: the heap
    /// may reach the top of the 32-bit address space).
    fn carve(&mut self, size: usize, align: usize) -> usize {
        let Some(start) = self.next.checked_add(align - 1).map(|n| n & !(align - 1)) else { return 0 };
        let Some(stop) = start.checked_add(size) else { return 0 };
        if stop > self.end {
            let pages = (stop - self.end).div_ceil(PAGE);
            let Some(grown) = pages.checked_mul(PAGE) else { return 0 };
            let old = core::arch::wasm32::memory_grow(0, pages);
            if old == usize::MAX {
                return 0;
            }
            let Some(base) = old.checked_mul(PAGE) else { return 0 };
            let Some(end) = base.checked_add(grown) else { return 0 };
            if base != self.end {
                // The first run of pages (or memory grown by someone else):
                // start over at the new pages.
                self.next = base;
                self.end = end;
                return self.carve(size, align);
            }
            self.end = end;
        }
        self.next = stop;
        start
    }
}

// Out of line: inlined, each of the crate's allocations carries a copy
// (measured: the .wasm grew by 0.6 KB gzip instead of shrinking).
unsafe impl GlobalAlloc for SizeClasses {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(class) = class(layout) else { return std::ptr::null_mut() };
        let state = &mut *self.0.get();
        let size = MIN_BLOCK << class;
        if layout.align() <= MAX_ALIGN {
            let head = state.free[class];
            if head != 0 {
                // Invariant 2: the block's first word links the list.
                state.free[class] = *(head as *const usize);
                return head as *mut u8;
            }
        }
        state.carve(size, layout.align().max(MAX_ALIGN)) as *mut u8
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(class) = class(layout) {
            let state = &mut *self.0.get();
            *(ptr as *mut usize) = state.free[class];
            state.free[class] = ptr as usize;
        }
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = Layout::from_size_align_unchecked(new_size, layout.align());
        if class(new) == class(layout) {
            return ptr;
        }
        let out = self.alloc(new);
        if !out.is_null() {
            std::ptr::copy_nonoverlapping(ptr, out, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        out
    }
}
