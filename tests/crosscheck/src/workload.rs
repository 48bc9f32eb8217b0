//! The scripted workload: parsing `workload.txt` and running it through an [`FsOps`].
//!
//! One operation a line (`#` starts a comment); `=> ERRNO` at the end means the operation must
//! fail with exactly that errno:
//!
//! ```text
//! mkdir PATH MODE            create PATH MODE           write PATH OFFSET LEN STREAM
//! truncate PATH SIZE         rename FROM TO             link EXISTING NEW
//! unlink PATH                rmdir PATH                 symlink TARGET PATH
//! chmod PATH MODE            setxattr PATH NAME LEN STREAM
//! ```
//!
//! PATHs are relative to the workload's directory; MODE is octal; OFFSET, LEN and SIZE are
//! bytes with an optional `K` or `M` suffix; STREAM picks the content ([`crate::fill`]: the
//! byte at file offset `p` depends on the stream and `p`).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use crate::manifest::Report;
use crate::{errno_by_name, fill, Errno, FsOps};

/// One operation of the script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Mkdir {
        path: String,
        mode: u32,
    },
    Create {
        path: String,
        mode: u32,
    },
    Write {
        path: String,
        offset: u64,
        len: u64,
        stream: u64,
    },
    Truncate {
        path: String,
        size: u64,
    },
    Rename {
        from: String,
        to: String,
    },
    Link {
        existing: String,
        path: String,
    },
    Unlink {
        path: String,
    },
    Rmdir {
        path: String,
    },
    Symlink {
        target: String,
        path: String,
    },
    Chmod {
        path: String,
        mode: u32,
    },
    SetXattr {
        path: String,
        name: String,
        len: u64,
        stream: u64,
    },
}

/// A parsed line: the operation, the errno it must fail with (`None`: must succeed), and
/// where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub line: usize,
    pub text: String,
    pub op: Op,
    pub expect: Option<Errno>,
}

fn path(s: &str) -> Result<String, String> {
    if s.is_empty()
        || s.starts_with('/')
        || s.split('/').any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(format!("bad path {s:?} (relative, no . or .. components)"));
    }
    Ok(s.to_string())
}

fn mode(s: &str) -> Result<u32, String> {
    u32::from_str_radix(s, 8)
        .ok()
        .filter(|m| *m <= 0o7777)
        .ok_or_else(|| format!("bad mode {s:?}"))
}

fn size(s: &str) -> Result<u64, String> {
    let (num, mult) = match s.as_bytes().last() {
        Some(b'K') => (&s[..s.len() - 1], 1024),
        Some(b'M') => (&s[..s.len() - 1], 1024 * 1024),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("bad number {s:?}"))
}

/// Largest LEN a write or setxattr may ask for (the runner allocates it).
pub const MAX_LEN: u64 = 64 * 1024 * 1024;

/// Parse a workload script.
pub fn parse(script: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for (i, raw) in script.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = |e: String| format!("workload line {}: {e}", i + 1);
        let (body, expect) = match line.split_once("=>") {
            Some((b, e)) => {
                let e = e.trim();
                (
                    b.trim(),
                    Some(errno_by_name(e).ok_or_else(|| at(format!("unknown errno {e:?}")))?),
                )
            }
            None => (line, None),
        };
        let w: Vec<&str> = body.split_whitespace().collect();
        let op = (|| -> Result<Op, String> {
            Ok(match w.as_slice() {
                ["mkdir", p, m] => Op::Mkdir {
                    path: path(p)?,
                    mode: mode(m)?,
                },
                ["create", p, m] => Op::Create {
                    path: path(p)?,
                    mode: mode(m)?,
                },
                ["write", p, o, l, s] => Op::Write {
                    path: path(p)?,
                    offset: size(o)?,
                    len: size(l)?,
                    stream: size(s)?,
                },
                ["truncate", p, s] => Op::Truncate {
                    path: path(p)?,
                    size: size(s)?,
                },
                ["rename", a, b] => Op::Rename {
                    from: path(a)?,
                    to: path(b)?,
                },
                ["link", a, b] => Op::Link {
                    existing: path(a)?,
                    path: path(b)?,
                },
                ["unlink", p] => Op::Unlink { path: path(p)? },
                ["rmdir", p] => Op::Rmdir { path: path(p)? },
                ["symlink", t, p] => Op::Symlink {
                    target: t.to_string(),
                    path: path(p)?,
                },
                ["chmod", p, m] => Op::Chmod {
                    path: path(p)?,
                    mode: mode(m)?,
                },
                ["setxattr", p, n, l, s] => Op::SetXattr {
                    path: path(p)?,
                    name: n.to_string(),
                    len: size(l)?,
                    stream: size(s)?,
                },
                _ => return Err(format!("cannot parse {body:?}")),
            })
        })()
        .map_err(at)?;
        if let Op::Write { len, .. } | Op::SetXattr { len, .. } = op {
            if len > MAX_LEN {
                return Err(at(format!("length {len} over {MAX_LEN}")));
            }
        }
        steps.push(Step {
            line: i + 1,
            text: line.to_string(),
            op,
            expect,
        });
    }
    Ok(steps)
}

/// Run one operation.
pub fn run_op(op: &Op, ops: &mut dyn FsOps) -> Result<(), Errno> {
    match op {
        Op::Mkdir { path, mode } => ops.mkdir(path, *mode),
        Op::Create { path, mode } => ops.create(path, *mode),
        Op::Write {
            path,
            offset,
            len,
            stream,
        } => {
            let mut buf = vec![0u8; (*len).min(1 << 20) as usize];
            let mut done = 0;
            while done < *len {
                let n = (len - done).min(buf.len() as u64) as usize;
                fill(*stream, offset + done, &mut buf[..n]);
                ops.write_at(path, offset + done, &buf[..n])?;
                done += n as u64;
            }
            Ok(())
        }
        Op::Truncate { path, size } => ops.truncate(path, *size),
        Op::Rename { from, to } => ops.rename(from, to),
        Op::Link { existing, path } => ops.link(existing, path),
        Op::Unlink { path } => ops.unlink(path),
        Op::Rmdir { path } => ops.rmdir(path),
        Op::Symlink { target, path } => ops.symlink(target, path),
        Op::Chmod { path, mode } => ops.chmod(path, *mode),
        Op::SetXattr {
            path,
            name,
            len,
            stream,
        } => {
            let mut v = vec![0u8; *len as usize];
            fill(*stream, 0, &mut v);
            ops.set_xattr(path, name, &v)
        }
    }
}

/// Run every step, checking each result (success, or the expected errno); then sync.
pub fn run(steps: &[Step], ops: &mut dyn FsOps) -> Report {
    let mut r = Report::default();
    for s in steps {
        let got = run_op(&s.op, ops);
        match (got, s.expect) {
            (Ok(()), None) => r.pass(),
            (Err(e), Some(want)) if e == want => r.pass(),
            (Ok(()), Some(want)) => r.fail(format!(
                "line {}: {}: succeeded, want {}",
                s.line,
                s.text,
                want.name()
            )),
            (Err(e), want) => r.fail(format!(
                "line {}: {}: {}, want {}",
                s.line,
                s.text,
                e.name(),
                want.map(|w| w.name()).unwrap_or("success")
            )),
        }
    }
    match ops.sync() {
        Ok(()) => r.pass(),
        Err(e) => r.fail(format!("sync: {}", e.name())),
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_in_script_parses() {
        let steps = parse(crate::WORKLOAD).unwrap();
        assert!(steps.len() > 40);
        assert!(steps.iter().any(|s| s.expect.is_some()));
    }

    #[test]
    fn lines_parse_and_bad_lines_are_errors() {
        let s = parse("write a/b 4K 1M 7 # comment\nrmdir d => ENOTEMPTY\n\n# only a comment\n")
            .unwrap();
        assert_eq!(
            s[0].op,
            Op::Write {
                path: "a/b".into(),
                offset: 4096,
                len: 1 << 20,
                stream: 7
            }
        );
        assert_eq!(s[1].expect, Some(Errno::ENOTEMPTY));
        assert_eq!(s[1].line, 2);
        for bad in [
            "mkdir /abs 755",
            "mkdir a/../b 755",
            "mkdir a 9",
            "write a 0 x 1",
            "rmdir a => EWHAT",
            "frobnicate a",
            "write a 0 1000M 1",
            "unlink",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
