//! Extended attribute requests: setxattr, getxattr, listxattr, removexattr, and the size
//! protocol of their replies (a size of 0 asks for the length).

use std::ffi::OsStr;

use fuser::{Errno, INodeNo};
use vfs::XattrMode;

use crate::answer::{AnsEmpty, AnsXattr, Caller};

use super::convert::{err, utf8};
use super::state::DbFuse;

// The operations keep the argument lists of fuser's `Filesystem` methods they stand for.
#[allow(clippy::too_many_arguments)]
impl DbFuse {
    pub(crate) fn setxattr(
        &self,
        _req: &Caller,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: impl AnsEmpty,
    ) {
        let r = (|| {
            let mode = match flags {
                0 => XattrMode::Any,
                libc::XATTR_CREATE => XattrMode::Create,
                libc::XATTR_REPLACE => XattrMode::Replace,
                _ => return Err(Errno::EINVAL),
            };
            self.node(ino)?
                .setxattr(utf8(name)?, value, mode)
                .map_err(err)
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn getxattr(
        &self,
        _req: &Caller,
        ino: INodeNo,
        name: &OsStr,
        size: u32,
        reply: impl AnsXattr,
    ) {
        match self
            .node(ino)
            .and_then(|n| n.getxattr(utf8(name)?).map_err(err))
        {
            Ok(v) => Self::xattr_reply(&v, size, reply),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn listxattr(&self, _req: &Caller, ino: INodeNo, size: u32, reply: impl AnsXattr) {
        match self.node(ino).and_then(|n| n.listxattr().map_err(err)) {
            Ok(names) => {
                let mut buf = Vec::new();
                for n in names {
                    buf.extend_from_slice(n.as_bytes());
                    buf.push(0);
                }
                Self::xattr_reply(&buf, size, reply)
            }
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn removexattr(
        &self,
        _req: &Caller,
        ino: INodeNo,
        name: &OsStr,
        reply: impl AnsEmpty,
    ) {
        match self
            .node(ino)
            .and_then(|n| n.removexattr(utf8(name)?).map_err(err))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn xattr_reply(data: &[u8], size: u32, reply: impl AnsXattr) {
        if size == 0 {
            reply.size(data.len() as u32);
        } else if (size as usize) < data.len() {
            reply.error(Errno::ERANGE);
        } else {
            reply.data(data);
        }
    }
}
