//! The console terminal: Linux's line discipline (N_TTY) over the UART, as far as a shell and
//! the programs it runs need it.
//!
//! Input bytes are pulled from the UART by [`poll_input`] (the scheduler's idle loop and every
//! timer tick call it; there is no UART interrupt) and run through the discipline at once, so
//! ^C reaches the foreground process group even while a program loops without reading:
//! - `ISIG`: VINTR (^C) sends SIGINT, VQUIT (^\) SIGQUIT, VSUSP (^Z) SIGTSTP to the foreground
//!   group, and flushes pending input;
//! - `ICANON`: input is edited line by line (VERASE, VKILL, VWERASE; VEOF = ^D ends a line
//!   without a newline, and at the start of a line makes read return 0) and a read returns at
//!   most one line; otherwise a read returns what is there (VMIN/VTIME: VMIN 0 with VTIME
//!   waits at most VTIME tenths of a second);
//! - `ECHO`, `ECHOE`, `ECHOCTL` (^X for control characters), `ICRNL`/`INLCR`/`IGNCR` on input,
//!   `OPOST`+`ONLCR` on output.
//!
//! Ioctls: TCGETS/TCSETS/TCSETSW/TCSETSF, TIOCGPGRP/TIOCSPGRP, TIOCGSID, TIOCSCTTY,
//! TIOCNOTTY, TIOCGWINSZ/TIOCSWINSZ, FIONREAD. One terminal, one session: the foreground group
//! starts as init's. Job-control stops (SIGTTIN, SIGTTOU) are not generated.
//!
//! Lock rule: `TTY` is never held while sleeping, sending a signal or writing to the UART
//! from a sleeping path; readers sleep on `READERS`.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::arch::lockcheck::{rank, SpinLock};
use abi::Errno;

use crate::arch::console;
use crate::task::signal;
use crate::task::wait::WaitQueue;

const NCCS: usize = 19;
const VINTR: usize = 0;
const VQUIT: usize = 1;
const VERASE: usize = 2;
const VKILL: usize = 3;
const VEOF: usize = 4;
const VTIME: usize = 5;
const VMIN: usize = 6;
const VSUSP: usize = 10;
const VWERASE: usize = 14;

const ISIG: u32 = 0o1;
const ICANON: u32 = 0o2;
const ECHO: u32 = 0o10;
const ECHOE: u32 = 0o20;
const ECHOK: u32 = 0o40;
const ECHONL: u32 = 0o100;
const NOFLSH: u32 = 0o200;
const ECHOCTL: u32 = 0o1000;
const ECHOKE: u32 = 0o4000;
const IEXTEN: u32 = 0o100000;
const INLCR: u32 = 0o100;
const IGNCR: u32 = 0o200;
const ICRNL: u32 = 0o400;
const IXON: u32 = 0o2000;
const OPOST: u32 = 0o1;
const ONLCR: u32 = 0o4;

/// `struct termios` of asm-generic (what TCGETS copies): 36 bytes.
#[derive(Clone, Copy)]
struct Termios {
    iflag: u32,
    oflag: u32,
    cflag: u32,
    lflag: u32,
    line: u8,
    cc: [u8; NCCS],
}

impl Termios {
    const SIZE: usize = 36;
    const fn sane() -> Self {
        Termios {
            iflag: ICRNL | IXON,
            oflag: OPOST | ONLCR,
            // B38400 | CS8 | CREAD | HUPCL
            cflag: 0o17 | 0o60 | 0o200 | 0o2000,
            lflag: ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN,
            line: 0,
            cc: [
                3, 0x1c, 0x7f, 0x15, 4, 0, 1, 0, 0x11, 0x13, 0x1a, 0, 0x12, 0x0f, 0x17, 0x16, 0, 0,
                0,
            ],
        }
    }
    fn to_bytes(self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..4].copy_from_slice(&self.iflag.to_le_bytes());
        b[4..8].copy_from_slice(&self.oflag.to_le_bytes());
        b[8..12].copy_from_slice(&self.cflag.to_le_bytes());
        b[12..16].copy_from_slice(&self.lflag.to_le_bytes());
        b[16] = self.line;
        b[17..17 + NCCS].copy_from_slice(&self.cc);
        b
    }
    fn from_bytes(b: &[u8; Self::SIZE]) -> Self {
        let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut cc = [0u8; NCCS];
        cc.copy_from_slice(&b[17..17 + NCCS]);
        Termios {
            iflag: w(0),
            oflag: w(4),
            cflag: w(8),
            lflag: w(12),
            line: b[16],
            cc,
        }
    }
}

struct Tty {
    termios: Termios,
    /// Canonical mode: finished lines (a line ended by VEOF has no newline; an empty one is
    /// end of file).
    lines: VecDeque<Vec<u8>>,
    /// Canonical mode: the line being edited.
    editing: Vec<u8>,
    /// Non-canonical mode: bytes ready to read.
    raw: VecDeque<u8>,
    fg_pgrp: usize,
    winsize: [u16; 4],
}

static TTY: SpinLock<Tty, { rank::TTY }> = SpinLock::new(Tty {
    termios: Termios::sane(),
    lines: VecDeque::new(),
    editing: Vec::new(),
    raw: VecDeque::new(),
    fg_pgrp: 1,
    winsize: [24, 80, 0, 0],
});
static READERS: WaitQueue = WaitQueue::new();

/// Console output with the terminal's output processing (`OPOST` + `ONLCR`).
pub fn write(buf: &[u8]) {
    let oflag = TTY.lock().termios.oflag;
    if oflag & (OPOST | ONLCR) == OPOST | ONLCR {
        console::write_bytes(buf);
    } else {
        console::write_raw(buf);
    }
}

/// Echo a byte as the terminal's local flags say. Called with the lock held (UART writes do
/// not sleep).
fn echo(t: &Tty, c: u8) {
    let l = t.termios.lflag;
    if l & ECHO == 0 {
        if c == b'\n' && l & ECHONL != 0 {
            console::write_bytes(b"\n");
        }
        return;
    }
    if c == b'\n' {
        console::write_bytes(b"\n");
    } else if c < 0x20 && c != b'\t' && l & ECHOCTL != 0 {
        console::write_raw(&[b'^', c + 0x40]);
    } else if c == 0x7f && l & ECHOCTL != 0 {
        console::write_raw(b"^?");
    } else {
        console::write_raw(&[c]);
    }
}

fn erase_one(t: &mut Tty) {
    if let Some(c) = t.editing.pop() {
        if t.termios.lflag & ECHO != 0 && t.termios.lflag & ECHOE != 0 {
            let width = if c < 0x20 && c != b'\t' && t.termios.lflag & ECHOCTL != 0 {
                2
            } else {
                1
            };
            for _ in 0..width {
                console::write_raw(b"\x08 \x08");
            }
        }
    }
}

/// Run one input byte through the discipline; returns a signal for the foreground group.
fn input_byte(t: &mut Tty, mut c: u8) -> Option<usize> {
    let (i, l) = (t.termios.iflag, t.termios.lflag);
    if c == b'\r' {
        if i & IGNCR != 0 {
            return None;
        }
        if i & ICRNL != 0 {
            c = b'\n';
        }
    } else if c == b'\n' && i & INLCR != 0 {
        c = b'\r';
    }
    let cc = t.termios.cc;
    if l & ISIG != 0 {
        let sig = if c == cc[VINTR] && c != 0 {
            Some(signal::SIGINT)
        } else if c == cc[VQUIT] && c != 0 {
            Some(signal::SIGQUIT)
        } else if c == cc[VSUSP] && c != 0 {
            Some(signal::SIGTSTP)
        } else {
            None
        };
        if let Some(s) = sig {
            if l & NOFLSH == 0 {
                t.lines.clear();
                t.editing.clear();
                t.raw.clear();
            }
            echo(t, c);
            return Some(s);
        }
    }
    if l & ICANON != 0 {
        if c == cc[VERASE] || c == 0x08 {
            erase_one(t);
        } else if c == cc[VWERASE] && l & IEXTEN != 0 {
            while t.editing.last() == Some(&b' ') {
                erase_one(t);
            }
            while t.editing.last().is_some_and(|&b| b != b' ') {
                erase_one(t);
            }
        } else if c == cc[VKILL] {
            while !t.editing.is_empty() {
                erase_one(t);
            }
        } else if c == cc[VEOF] {
            let line = core::mem::take(&mut t.editing);
            t.lines.push_back(line);
        } else if c == b'\n' {
            echo(t, c);
            let mut line = core::mem::take(&mut t.editing);
            line.push(b'\n');
            t.lines.push_back(line);
        } else if t.editing.len() < 4095 {
            echo(t, c);
            t.editing.push(c);
        }
    } else {
        echo(t, c);
        if t.raw.len() < 4096 {
            t.raw.push_back(c);
        }
    }
    None
}

/// Take every byte waiting at the UART through the discipline, wake readers and signal the
/// foreground group as needed.
pub fn poll_input() {
    let mut got = false;
    let mut sigs: Vec<(usize, usize)> = Vec::new();
    {
        let mut t = TTY.lock();
        while let Some(c) = console::getc() {
            got = true;
            if let Some(s) = input_byte(&mut t, c) {
                sigs.push((s, t.fg_pgrp));
            }
        }
    }
    for (sig, pgrp) in sigs {
        for p in crate::task::processes_in_group(pgrp) {
            signal::send(&p, sig);
        }
    }
    if got {
        READERS.wake_all();
        crate::task::wait::poll_wake();
    }
}

/// Whether a read would return at once (poll).
pub fn readable() -> bool {
    poll_input();
    let t = TTY.lock();
    if t.termios.lflag & ICANON != 0 {
        !t.lines.is_empty()
    } else {
        !t.raw.is_empty() || t.termios.cc[VMIN] == 0
    }
}

/// read(2) on the terminal.
pub fn read(buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
    if buf.is_empty() {
        return Ok(0);
    }
    let mut deadline = None;
    loop {
        poll_input();
        {
            let mut t = TTY.lock();
            if t.termios.lflag & ICANON != 0 {
                if let Some(line) = t.lines.front_mut() {
                    if line.is_empty() {
                        t.lines.pop_front();
                        return Ok(0); // ^D at the start of a line
                    }
                    let n = buf.len().min(line.len());
                    buf[..n].copy_from_slice(&line[..n]);
                    line.drain(..n);
                    if line.is_empty() {
                        t.lines.pop_front();
                    }
                    return Ok(n);
                }
            } else {
                if !t.raw.is_empty() {
                    let n = buf.len().min(t.raw.len());
                    for (i, b) in t.raw.drain(..n).enumerate() {
                        buf[i] = b;
                    }
                    return Ok(n);
                }
                let (vmin, vtime) = (t.termios.cc[VMIN], t.termios.cc[VTIME]);
                if vmin == 0 {
                    if vtime == 0 {
                        return Ok(0);
                    }
                    let now = crate::arch::time::monotonic_ns();
                    let d = *deadline.get_or_insert(now + vtime as u64 * 100_000_000);
                    if now >= d {
                        return Ok(0);
                    }
                }
            }
        }
        if nonblock {
            return Err(Errno::EAGAIN);
        }
        if signal::pending() {
            return Err(signal::ERESTARTSYS);
        }
        READERS.sleep_until(deadline);
    }
}

const TCGETS: u32 = 0x5401;
const TCSETS: u32 = 0x5402;
const TCSETSW: u32 = 0x5403;
const TCSETSF: u32 = 0x5404;
const TIOCSCTTY: u32 = 0x540e;
const TIOCGPGRP: u32 = 0x540f;
const TIOCSPGRP: u32 = 0x5410;
const TIOCGWINSZ: u32 = 0x5413;
const TIOCSWINSZ: u32 = 0x5414;
const FIONREAD: u32 = 0x541b;
const TIOCNOTTY: u32 = 0x5422;
const TIOCGSID: u32 = 0x5429;

/// Reads user memory at an address into a buffer (the syscall layer's `copy_in`).
pub type CopyIn = dyn Fn(usize, &mut [u8]) -> Result<(), Errno>;
/// Writes a buffer to user memory at an address (the syscall layer's `copy_out`).
pub type CopyOut = dyn Fn(usize, &[u8]) -> Result<(), Errno>;

/// ioctl(2) on the terminal; user memory goes through `copy_in`/`copy_out`.
pub fn ioctl(cmd: u32, arg: usize, copy_in: &CopyIn, copy_out: &CopyOut) -> Result<usize, Errno> {
    match cmd {
        TCGETS => {
            let b = TTY.lock().termios.to_bytes();
            copy_out(arg, &b)?;
        }
        TCSETS | TCSETSW | TCSETSF => {
            let mut b = [0u8; Termios::SIZE];
            copy_in(arg, &mut b)?;
            let mut t = TTY.lock();
            let was_canon = t.termios.lflag & ICANON != 0;
            t.termios = Termios::from_bytes(&b);
            if cmd == TCSETSF {
                t.lines.clear();
                t.editing.clear();
                t.raw.clear();
            } else if was_canon && t.termios.lflag & ICANON == 0 {
                // Leaving canonical mode: what was typed becomes readable as is.
                let mut pending: Vec<u8> = t.lines.drain(..).flatten().collect();
                pending.append(&mut t.editing);
                t.raw.extend(pending);
            } else if !was_canon && t.termios.lflag & ICANON != 0 && !t.raw.is_empty() {
                // Entering canonical mode with bytes typed ahead (a shell's line editor has
                // just run a command): they become lines, ended by newline or VEOF, and the
                // rest is the line being edited.
                let eof = t.termios.cc[VEOF];
                let bytes: Vec<u8> = t.raw.drain(..).collect();
                for b in bytes {
                    if b == eof {
                        let line = core::mem::take(&mut t.editing);
                        t.lines.push_back(line);
                    } else {
                        t.editing.push(b);
                        if b == b'\n' {
                            let line = core::mem::take(&mut t.editing);
                            t.lines.push_back(line);
                        }
                    }
                }
            }
        }
        TIOCGPGRP => {
            let pg = TTY.lock().fg_pgrp as i32;
            copy_out(arg, &pg.to_le_bytes())?;
        }
        TIOCSPGRP => {
            let mut b = [0u8; 4];
            copy_in(arg, &mut b)?;
            let pg = i32::from_le_bytes(b);
            if pg < 0 {
                return Err(Errno::EINVAL);
            }
            if crate::task::processes_in_group(pg as usize).is_empty() {
                return Err(Errno::EPERM);
            }
            TTY.lock().fg_pgrp = pg as usize;
        }
        TIOCGSID => {
            let sid = crate::task::with_current(|p| p.sid) as i32;
            copy_out(arg, &sid.to_le_bytes())?;
        }
        TIOCGWINSZ => {
            let w = TTY.lock().winsize;
            let b: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
            copy_out(arg, &b)?;
        }
        TIOCSWINSZ => {
            let mut b = [0u8; 8];
            copy_in(arg, &mut b)?;
            let mut t = TTY.lock();
            for i in 0..4 {
                t.winsize[i] = u16::from_le_bytes([b[2 * i], b[2 * i + 1]]);
            }
        }
        FIONREAD => {
            poll_input();
            let n = {
                let t = TTY.lock();
                if t.termios.lflag & ICANON != 0 {
                    t.lines.front().map_or(0, |l| l.len())
                } else {
                    t.raw.len()
                }
            } as i32;
            copy_out(arg, &n.to_le_bytes())?;
        }
        TIOCSCTTY | TIOCNOTTY => {}
        _ => return Err(Errno::ENOTTY),
    }
    Ok(0)
}
