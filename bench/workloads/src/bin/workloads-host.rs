//! `workloads-host NAME:DIR... [reps=N] [workloads=all|NAME,...] [quick]`: the seed
//! experiments' other workloads (crate `workloads`) against host directories, e.g. a dbfs-fuse
//! mount, a fuse2fs mount and a tmpfs directory; the same code as the guest's /bin/workloads.
//! `make bench-workloads-host` runs it on fresh mounts (bench/workloads/host.sh).

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut fs = workloads::host::HostFs::default();
    std::process::exit(workloads::main(&mut fs, &argv));
}
