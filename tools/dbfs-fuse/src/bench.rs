//! Benchmark helpers that work on any directory of any file system (`make bench-fuse` runs
//! them on a dbfs-fuse mount and on fuse2fs).

use std::path::Path;
use std::time::Instant;

/// `createdel`: create `n` one-byte files in a fixed random order, unlink them in sorted
/// order, print one RESULT line.
pub(crate) fn createdel(dir: &Path, n: u32, label: &str) -> Result<(), String> {
    let mut order: Vec<u32> = (0..n).collect();
    // A fixed seed: every run and every file system sees one order.
    xrand::XorShift64::new(0x2545_F491_4F6C_DD1D).shuffle(&mut order);
    let name = |i: u32| dir.join(format!("x{i:06}"));
    let start = Instant::now();
    for &i in &order {
        std::fs::write(name(i), b"x").map_err(|e| format!("create x{i:06}: {e}"))?;
    }
    let created = start.elapsed();
    for i in 0..n {
        std::fs::remove_file(name(i)).map_err(|e| format!("unlink x{i:06}: {e}"))?;
    }
    let total = start.elapsed();
    println!(
        "RESULT bench=createdel fs={label} n={n} create_secs={:.3} delete_secs={:.3} secs={:.3} ops_per_sec={:.0}",
        created.as_secs_f64(),
        (total - created).as_secs_f64(),
        total.as_secs_f64(),
        f64::from(2 * n) / total.as_secs_f64()
    );
    Ok(())
}
