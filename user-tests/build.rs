//! Link every program of this package with `user.ld`: static, non-PIE, loaded at 0x1_0000_0000.
//! The flag is passed to this package's binaries only (`rustc-link-arg-bins`), so the kernel and
//! the host crates are unaffected.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rerun-if-changed=user.ld");
    println!("cargo:rerun-if-changed=build.rs");
    if target.starts_with("riscv64") {
        println!("cargo:rustc-link-arg-bins=-T{dir}/user.ld");
        println!("cargo:rustc-link-arg-bins=--no-pie");
        println!("cargo:rustc-link-arg-bins=-zmax-page-size=4096");
    }
}
