//! Termination signals for the foreground mount: blocked everywhere, taken by one thread
//! with `sigwait`.

/// The blocked signal set, for [`wait`].
pub struct Set(libc::sigset_t);

/// Block SIGINT, SIGTERM and SIGHUP in this thread and in the threads it creates later.
pub fn block_termination() -> std::io::Result<Set> {
    // SAFETY: sigemptyset/sigaddset write only into the local set; pthread_sigmask reads it
    // and changes this thread's mask (inherited by threads created after this call).
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        let r = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if r != 0 {
            return Err(std::io::Error::from_raw_os_error(r));
        }
        Ok(Set(set))
    }
}

/// Wait for one of the blocked signals; `None` if waiting failed.
pub fn wait(set: &Set) -> Option<i32> {
    let mut sig: libc::c_int = 0;
    // SAFETY: `set` is an initialised sigset_t and `sig` a valid out-pointer.
    let r = unsafe { libc::sigwait(&set.0, &mut sig) };
    (r == 0).then_some(sig)
}
