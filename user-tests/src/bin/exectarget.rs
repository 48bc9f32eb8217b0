//! `exectarget MODE ...`: the program the test runner's exec tests run (testrunner's
//! `exec_tests.rs`). Exits 0 when what it checks holds, 1 (or 2 for bad arguments) if not.
//!
//! - `hold R W`: read every page of [`TABLE`] (4 MiB of read-only data, in the file), write a
//!   byte to descriptor W, wait until descriptor R has a byte or ends; exits 0 if the table
//!   read back right. Several of these at once must share the table's frames.
//! - `data [R W]`: [`DATA`] (initialised data) holds its initial bytes and [`BSS`] is all zero;
//!   then store into both. With R and W, it then writes a byte to W and waits on R before it
//!   exits, so that another process of the same program can start while its stores are in place.
//! - `touch ADDR PAGES`: read pages 0, 1, PAGES/2 and PAGES-1 of the `PAGES` pages at ADDR
//!   (hex): page i holds the byte `i % 251 + 1` in every position; page 2 is zero.
#![no_std]
#![no_main]

use core::hint::black_box;
use user_tests::prelude::*;

/// 4 MiB of read-only data (`.rodata`, in the file): every word the same non-zero value.
static TABLE: [u64; 512 * 1024] = [0x5a5a_0123_4567_89ab; 512 * 1024];
/// Initialised writable data (`.data`): over three pages, so that whole pages of it are
/// mapped from the file (and copied at the first store) besides the last one.
static mut DATA: [u8; 3 * 4096 + 64] = [0xa5; 3 * 4096 + 64];
/// Zero-initialised data (`.bss`), several pages, starting in the page the data ends in.
static mut BSS: [u8; 3 * 4096 + 123] = [0; 3 * 4096 + 123];

/// Read the table through a pointer the compiler cannot see through.
fn table_ok() -> bool {
    let t: &[u64] = black_box(&TABLE[..]);
    let mut ok = true;
    for page in t.chunks(512) {
        // SAFETY: `page` is a valid slice of the table.
        let w = unsafe { core::ptr::read_volatile(&page[0]) };
        ok &= w == 0x5a5a_0123_4567_89ab;
    }
    ok
}

/// `DATA` holds its initial bytes and `BSS` is zero; then store into both.
fn data_then_store() -> bool {
    // SAFETY: one thread; the statics are only touched here, through raw pointers.
    unsafe {
        let data = black_box(core::ptr::addr_of_mut!(DATA));
        let bss = black_box(core::ptr::addr_of_mut!(BSS));
        let ok = (*data).iter().all(|&b| b == 0xa5) && (*bss).iter().all(|&b| b == 0);
        (*data).fill(0x3c);
        (*bss).fill(0x77);
        ok && (*data).iter().all(|&b| b == 0x3c)
    }
}

fn fd_arg(s: &str) -> Option<i32> {
    s.parse().ok()
}

/// Tell the parent we are ready on `w`, then wait for its byte (or end of file) on `r`.
fn signal_and_wait(r: i32, w: i32) {
    let _ = sys::write(w, b"r");
    let mut b = [0u8; 1];
    let _ = sys::read(r, &mut b);
}

fn touch(addr: usize, pages: usize) -> bool {
    let mut ok = true;
    for i in [0, 1, pages / 2, pages - 1] {
        let want = (i % 251 + 1) as u8;
        for at in [0, 2049, 4095] {
            // SAFETY: the caller says [addr, addr + pages * 4096) is mapped and readable.
            let got = unsafe { core::ptr::read_volatile((addr + i * 4096 + at) as *const u8) };
            ok &= got == want;
        }
    }
    // SAFETY: as above.
    ok && unsafe { core::ptr::read_volatile((addr + 2 * 4096 + 7) as *const u8) } == 0
}

fn main(argv: &[&str]) -> i32 {
    match argv.get(1..).unwrap_or(&[]) {
        ["hold", r, w] => {
            let (Some(r), Some(w)) = (fd_arg(r), fd_arg(w)) else {
                return 2;
            };
            let ok = table_ok();
            signal_and_wait(r, w);
            i32::from(!ok)
        }
        ["data"] => i32::from(!data_then_store()),
        ["data", r, w] => {
            let (Some(r), Some(w)) = (fd_arg(r), fd_arg(w)) else {
                return 2;
            };
            let ok = data_then_store();
            signal_and_wait(r, w);
            i32::from(!ok)
        }
        ["touch", addr, pages] => {
            let (Ok(addr), Ok(pages)) = (
                usize::from_str_radix(addr.trim_start_matches("0x"), 16),
                pages.parse::<usize>(),
            ) else {
                return 2;
            };
            if pages < 4 {
                return 2;
            }
            i32::from(!touch(addr, pages))
        }
        _ => {
            eprintln!("usage: exectarget hold R W | data [R W] | touch ADDR PAGES");
            2
        }
    }
}

user_tests::entry!(main);
