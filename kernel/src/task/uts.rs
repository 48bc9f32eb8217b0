//! The host's names (task layer: Linux keeps them in the UTS namespace every task shares
//! here): the node name (sethostname, uname's `nodename`, /proc/sys/kernel/hostname) and the
//! NIS domain name (setdomainname, uname's `domainname`, /proc/sys/kernel/domainname).

use alloc::string::String;

use crate::sync::Mutex;

/// The release uname and /proc/sys/kernel/osrelease report: the Linux interface level the
/// system calls follow (Linux 6.12's, Debian trixie's kernel), then this kernel's name.
/// Programs compare the release with a Linux version to decide what to use (LTP skips a
/// test "for kernels older than 4.11", glibc and configure scripts choose code paths); a
/// feature such a program then asks for and we do not have gets ENOSYS or EINVAL, as from a
/// Linux built without it. The kernel's own version is in uname's version field.
pub const RELEASE: &str = "6.12.0-dbfs-os";

/// uname's version field and /proc/sys/kernel/version: this kernel and its crate version.
pub const VERSION: &str = concat!("#1 dbfs-os ", env!("CARGO_PKG_VERSION"));

/// Longest name (Linux's `__NEW_UTS_LEN`): uname's fields are 65 bytes with the NUL.
pub const UTS_LEN: usize = 64;

/// The names once set (`None`: the default).
static NODENAME: Mutex<Option<String>> = Mutex::new(None);
static DOMAINNAME: Mutex<Option<String>> = Mutex::new(None);

/// The node name ("dbfs-os" until sethostname sets one).
pub fn nodename() -> String {
    NODENAME
        .lock()
        .clone()
        .unwrap_or_else(|| String::from("dbfs-os"))
}

/// The NIS domain name ("(none)", as Linux's default, until setdomainname sets one).
pub fn domainname() -> String {
    DOMAINNAME
        .lock()
        .clone()
        .unwrap_or_else(|| String::from("(none)"))
}

/// Set the node name (`domain`: false) or the domain name (true); at most [`UTS_LEN`] bytes,
/// checked by the caller.
pub fn set(domain: bool, name: &[u8]) {
    let s = String::from_utf8_lossy(name).into_owned();
    *if domain { &DOMAINNAME } else { &NODENAME }.lock() = Some(s);
}
