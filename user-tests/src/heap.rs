//! The global allocator: power-of-two size classes carved from the program break (`brk`).
//!
//! A request is rounded up to a class (16 B .. 2^47 B); freed blocks go on that class's free
//! list and are reused by the next request of the same class. Memory is never returned to the
//! kernel. New memory comes from moving the break up in steps of at least `GROW_STEP` (256 KiB);
//! `brk` follows Linux semantics (it answers the new break, or the old one on failure).
//!
//! Processes are single-threaded (the library never creates threads; `fork` copies the address
//! space), which is why plain cells without locks are sound here.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr;

const MIN_CLASS: usize = 4; // 16 bytes
const CLASSES: usize = 48;
const GROW_STEP: usize = 256 * 1024;

struct State {
    /// Next unused byte below the break; 0 before the first allocation.
    top: usize,
    /// The current program break as last answered by the kernel.
    limit: usize,
    /// Heads of the free lists: each free block stores the next pointer in its first word.
    free: [usize; CLASSES],
}

pub struct BrkHeap {
    state: UnsafeCell<State>,
}

// SAFETY: user processes of this library are single-threaded (see module docs), so the cell is
// never accessed concurrently.
unsafe impl Sync for BrkHeap {}

impl BrkHeap {
    pub const fn new() -> Self {
        BrkHeap {
            state: UnsafeCell::new(State {
                top: 0,
                limit: 0,
                free: [0; CLASSES],
            }),
        }
    }
}

impl Default for BrkHeap {
    fn default() -> Self {
        Self::new()
    }
}

fn class_of(layout: Layout) -> Option<usize> {
    let size = layout.size().max(layout.align()).max(1 << MIN_CLASS);
    let class = size.checked_next_power_of_two()?.trailing_zeros() as usize;
    (class < CLASSES).then_some(class)
}

impl State {
    /// Carve a fresh block of `1 << class` bytes, aligned to min(block size, 4 KiB) or more.
    fn carve(&mut self, class: usize, align: usize) -> *mut u8 {
        if self.top == 0 {
            self.limit = crate::sys::brk(0);
            self.top = self.limit;
        }
        let size = 1usize << class;
        let align = align.max(size.min(crate::PAGE_SIZE));
        let start = match self.top.checked_add(align - 1) {
            Some(v) => v & !(align - 1),
            None => return ptr::null_mut(),
        };
        let end = match start.checked_add(size) {
            Some(v) => v,
            None => return ptr::null_mut(),
        };
        if end > self.limit {
            let want =
                (end.max(self.limit + GROW_STEP) + crate::PAGE_SIZE - 1) & !(crate::PAGE_SIZE - 1);
            let got = crate::sys::brk(want);
            if got < end {
                return ptr::null_mut();
            }
            self.limit = got;
        }
        self.top = end;
        start as *mut u8
    }
}

// SAFETY: blocks handed out are disjoint (carved once from fresh break memory, or popped from a
// free list they were pushed to by `dealloc`), at least `layout.size()` bytes long and aligned to
// `layout.align()` (a class is >= the alignment and blocks are aligned to their class size up to
// a page, and to the requested alignment beyond it).
unsafe impl GlobalAlloc for BrkHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(class) = class_of(layout) else {
            return ptr::null_mut();
        };
        // SAFETY: single-threaded (module docs); no other reference to the state is live.
        let st = unsafe { &mut *self.state.get() };
        let head = st.free[class];
        if head != 0 && head % layout.align() == 0 {
            // SAFETY: `head` is a free block of this class; its first word is the next link.
            st.free[class] = unsafe { *(head as *const usize) };
            return head as *mut u8;
        }
        st.carve(class, layout.align())
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let Some(class) = class_of(layout) else {
            return;
        };
        // SAFETY: single-threaded (module docs).
        let st = unsafe { &mut *self.state.get() };
        // SAFETY: `p` was allocated with this layout, so it is a block of `class` (>= 16 bytes,
        // word-aligned) that nobody uses any more: its first word can hold the link.
        unsafe { *(p as *mut usize) = st.free[class] };
        st.free[class] = p as usize;
    }
}
