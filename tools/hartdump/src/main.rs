//! `hartdump SOCKET KERNEL`: where every hart of a running (typically hung) guest is.
//!
//! Tests that boot QEMU start it with `-qmp unix:SOCKET,server=on,wait=off`; when a boot
//! times out they run this before killing QEMU. For each vCPU it asks QEMU's monitor for the
//! registers (through QMP's `human-monitor-command`, so the output is the HMP text without
//! the line editor's echo) and for the words at the top of its stack, keeps those that point
//! into the kernel's executable segments (read from the ELF's program headers), and names
//! them with `addr2line`: `pc` and `ra` first, then the stack's return-address candidates
//! from the innermost frame outwards. A stack scan is not an unwinder: a stale return address
//! left in a dead frame shows up too, so read it as "these functions are on or were recently
//! on this stack". A hart in user mode (or stopped in the firmware) prints its registers only.
//!
//! Exit status 0 when QEMU answered, 1 (with a message) when the socket could not be used.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::Command;
use std::time::Duration;

/// Stack words scanned per hart (from `sp` upwards).
const STACK_WORDS: usize = 512;
/// Return-address candidates printed per hart.
const MAX_FRAMES: usize = 24;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: hartdump QMP-SOCKET KERNEL-ELF");
        std::process::exit(2);
    }
    if let Err(e) = run(&args[1], &args[2]) {
        eprintln!("hartdump: {e}");
        std::process::exit(1);
    }
}

fn run(socket: &str, kernel: &str) -> Result<(), String> {
    let text = match std::fs::read(kernel) {
        Ok(elf) => exec_segments(&elf).unwrap_or_default(),
        Err(e) => {
            eprintln!("hartdump: {kernel}: {e} (addresses left unnamed)");
            Vec::new()
        }
    };
    let mut qmp = Qmp::connect(socket)?;
    let cpus = qmp.hmp(None, "info cpus")?;
    let count = cpus.lines().filter(|l| l.contains("CPU #")).count();
    if count == 0 {
        return Err(format!("no CPU in QEMU's answer to `info cpus`: {cpus:?}"));
    }
    println!("hartdump: {count} harts; kernel {kernel}");
    for cpu in 0..count {
        let regs = qmp.hmp(Some(cpu), "info registers")?;
        let reg = |name: &str| register(&regs, name);
        let (pc, ra, sp) = (reg("pc"), reg("x1/ra"), reg("x2/sp"));
        println!(
            "hart {cpu}: pc {} ra {} sp {} scause {} sepc {} stval {}",
            hex(pc),
            hex(ra),
            hex(sp),
            hex(reg("scause")),
            hex(reg("sepc")),
            hex(reg("stval")),
        );
        let in_text = |a: u64| text.iter().any(|&(lo, hi)| (lo..hi).contains(&a));
        let mut addrs: Vec<(String, u64)> = Vec::new();
        for (what, a) in [("pc", pc), ("ra", ra)] {
            if let Some(a) = a.filter(|&a| in_text(a)) {
                addrs.push((what.to_string(), a));
            }
        }
        if let Some(sp) = sp.filter(|&sp| sp >= 1 << 63) {
            let words = qmp.hmp(Some(cpu), &format!("x/{STACK_WORDS}gx {sp:#x}"))?;
            let found = stack_words(&words)
                .into_iter()
                .filter(|&(_, w)| in_text(w))
                .take(MAX_FRAMES);
            for (at, w) in found {
                addrs.push((format!("sp+{:#x}", at.wrapping_sub(sp)), w));
            }
        }
        for ((what, a), name) in addrs
            .iter()
            .zip(symbolize(kernel, addrs.iter().map(|a| a.1)))
        {
            println!("  {what:>9} {a:#018x} {name}");
        }
    }
    Ok(())
}

fn hex(v: Option<u64>) -> String {
    v.map_or_else(|| "?".to_string(), |v| format!("{v:#x}"))
}

/// The value of register `name` in QEMU's `info registers` text (` pc       ffff...`, or
/// ` x1/ra    ffff... x2/sp ...` several to a line).
fn register(regs: &str, name: &str) -> Option<u64> {
    let mut words = regs.split_whitespace();
    while let Some(w) = words.next() {
        if w == name {
            return u64::from_str_radix(words.next()?, 16).ok();
        }
    }
    None
}

/// (address, value) of each word in the answer to `x/Ngx ADDR`
/// (`ffffffc0802a0c60: 0x0000000000000000 0x...`).
fn stack_words(dump: &str) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for line in dump.lines() {
        let Some((addr, rest)) = line.split_once(':') else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        for (i, w) in rest.split_whitespace().enumerate() {
            if let Some(v) = w
                .strip_prefix("0x")
                .and_then(|h| u64::from_str_radix(h, 16).ok())
            {
                out.push((addr + 8 * i as u64, v));
            }
        }
    }
    out
}

/// The address ranges of an ELF64 little-endian file's executable PT_LOAD segments.
fn exec_segments(elf: &[u8]) -> Option<Vec<(u64, u64)>> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(elf.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(elf.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(elf.get(o..o + 8)?.try_into().ok()?));
    if elf.get(..4)? != b"\x7fELF" || elf.get(4)? != &2 || elf.get(5)? != &1 {
        return None;
    }
    let (phoff, phentsize, phnum) = (u64_at(32)? as usize, u16_at(54)? as usize, u16_at(56)?);
    let mut out = Vec::new();
    for i in 0..phnum as usize {
        let ph = phoff + i * phentsize;
        let (kind, flags) = (u32_at(ph)?, u32_at(ph + 4)?);
        if kind == 1 && flags & 1 != 0 {
            let (vaddr, memsz) = (u64_at(ph + 16)?, u64_at(ph + 40)?);
            out.push((vaddr, vaddr + memsz));
        }
    }
    Some(out)
}

/// `function (file:line)` for each address, with the functions it is inlined into after
/// `<`, by the first addr2line that runs (the cross binutils' for RISC-V, else the host's,
/// which may read RISC-V too); `?` without one.
fn symbolize(kernel: &str, addrs: impl Iterator<Item = u64>) -> Vec<String> {
    let addrs: Vec<String> = addrs.map(|a| format!("{a:#018x}")).collect();
    if addrs.is_empty() {
        return Vec::new();
    }
    for tool in ["riscv64-linux-gnu-addr2line", "addr2line", "llvm-addr2line"] {
        let Ok(out) = Command::new(tool)
            .args(["-a", "-f", "-i", "-C", "-e", kernel])
            .args(&addrs)
            .output()
        else {
            continue;
        };
        if !out.status.success() {
            continue;
        }
        // One group per address: the address, then (function, file:line) pairs, innermost
        // first.
        let text = String::from_utf8_lossy(&out.stdout);
        let mut groups: Vec<Vec<&str>> = Vec::new();
        for line in text.lines() {
            if line.starts_with("0x") {
                groups.push(Vec::new());
            } else if let Some(g) = groups.last_mut() {
                g.push(line);
            }
        }
        if groups.len() != addrs.len() {
            continue;
        }
        return groups
            .iter()
            .map(|g| {
                g.chunks(2)
                    .map(|fl| {
                        let file = fl.get(1).map_or("?", |f| f.rsplit('/').next().unwrap_or(f));
                        format!("{} ({file})", short_name(fl[0]))
                    })
                    .collect::<Vec<_>>()
                    .join(" < ")
            })
            .collect();
    }
    addrs.iter().map(|_| "?".to_string()).collect()
}

/// A demangled Rust path without its hash suffix and without generic arguments' paths.
fn short_name(name: &str) -> &str {
    match name.rfind("::h") {
        Some(i) if name[i + 3..].len() == 16 => &name[..i],
        _ => name,
    }
}

/// A QMP connection (JSON lines over the Unix socket).
struct Qmp {
    out: UnixStream,
    input: BufReader<UnixStream>,
}

impl Qmp {
    fn connect(path: &str) -> Result<Self, String> {
        let s = UnixStream::connect(path).map_err(|e| format!("{path}: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        let input = BufReader::new(s.try_clone().map_err(|e| e.to_string())?);
        let mut q = Qmp { out: s, input };
        q.line()?; // the greeting
        q.execute(r#"{"execute":"qmp_capabilities"}"#)?;
        Ok(q)
    }

    fn line(&mut self) -> Result<String, String> {
        let mut l = String::new();
        match self.input.read_line(&mut l) {
            Ok(0) => Err("QEMU closed the monitor".to_string()),
            Ok(_) => Ok(l),
            Err(e) => Err(format!("reading the monitor: {e}")),
        }
    }

    /// Send one command; its `return` line (asynchronous events before it are skipped).
    fn execute(&mut self, cmd: &str) -> Result<String, String> {
        writeln!(self.out, "{cmd}").map_err(|e| format!("writing the monitor: {e}"))?;
        loop {
            let l = self.line()?;
            if l.starts_with(r#"{"return""#) {
                return Ok(l);
            }
            if l.starts_with(r#"{"error""#) {
                return Err(format!("QEMU refused {cmd}: {}", l.trim()));
            }
        }
    }

    /// An HMP command's text output, on vCPU `cpu` if given.
    fn hmp(&mut self, cpu: Option<usize>, command: &str) -> Result<String, String> {
        let cpu = cpu
            .map(|c| format!(r#","cpu-index":{c}"#))
            .unwrap_or_default();
        let reply = self.execute(&format!(
            r#"{{"execute":"human-monitor-command","arguments":{{"command-line":"{command}"{cpu}}}}}"#
        ))?;
        let s = reply
            .trim()
            .strip_prefix(r#"{"return": ""#)
            .and_then(|r| r.strip_suffix(r#""}"#))
            .ok_or_else(|| format!("unexpected reply: {}", reply.trim()))?;
        Ok(unescape(s))
    }
}

/// A JSON string's content, unescaped.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('u') => {
                let h: String = chars.by_ref().take(4).collect();
                if let Some(c) = u32::from_str_radix(&h, 16).ok().and_then(char::from_u32) {
                    out.push(c);
                }
            }
            Some(c) => out.push(c),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_and_stack_words_parse() {
        let regs = " pc       ffffffc0802a0c6e\n x0/zero  0000000000000000 x1/ra    ffffffc080201000 x2/sp    ffffffc081000000\n";
        assert_eq!(register(regs, "pc"), Some(0xffffffc0802a0c6e));
        assert_eq!(register(regs, "x1/ra"), Some(0xffffffc080201000));
        assert_eq!(register(regs, "x2/sp"), Some(0xffffffc081000000));
        assert_eq!(register(regs, "scause"), None);
        let dump = "ffffffc081000000: 0x0000000000000001 0xffffffc080201234\nffffffc081000010: 0x0000000000000003\n";
        assert_eq!(
            stack_words(dump),
            vec![
                (0xffffffc081000000, 1),
                (0xffffffc081000008, 0xffffffc080201234),
                (0xffffffc081000010, 3)
            ]
        );
    }

    #[test]
    fn json_strings_unescape() {
        assert_eq!(unescape(r#"a\r\nb\"c\\d\u0041"#), "a\r\nb\"c\\dA");
    }

    #[test]
    fn short_names_lose_their_hash() {
        assert_eq!(short_name("kernel::f::h0123456789abcdef"), "kernel::f");
        assert_eq!(short_name("kernel::hart::lock"), "kernel::hart::lock");
    }
}
