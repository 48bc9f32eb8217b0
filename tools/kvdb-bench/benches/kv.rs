//! kvdb vs jammdb vs redb, same workloads, same temp directory, one process.
//!
//! Workloads: sequential insert of 100k keys in one transaction; 1000 one-key write transactions
//! with sync (and without, where the engine allows it); random get of 100k keys; full cursor scan;
//! 64 KiB values written (256 of them, one transaction) and read back into a caller buffer.
//! Keys are 8-byte big-endian integers, small values 100 bytes. Every commit that "syncs" calls
//! fsync/fdatasync (jammdb always does; it has no way to skip it).
//!
//! kvdb runs twice: over its own `FilePager` (`kvdb`: pages read with `pread` into heap
//! buffers it caches) and over `kvdb_mmap::MmapPager` (`kvdb-mmap`: pages as slices of a
//! mapping of the file, as jammdb reads its pages). The engine's code is the same in both.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};
use kvdb::Pager;
use redb::{ReadableTable, TableDefinition};

const N: u64 = 100_000;
const SMALL_TXS: u64 = 1000;
const BIG_VALUES: u64 = 256;
const BIG: usize = 64 * 1024;
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("t");

fn value(i: u64) -> [u8; 100] {
    let mut v = [0u8; 100];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v
}

fn big_value(i: u64) -> Vec<u8> {
    (0..BIG).map(|j| (j as u64 ^ i) as u8).collect()
}

/// A fixed permutation of 0..N (multiplicative hashing by an odd constant modulo a power of two
/// would not be a permutation of 0..N, so shuffle with a seeded xorshift).
fn shuffled() -> Vec<u64> {
    let mut v: Vec<u64> = (0..N).collect();
    xrand::XorShift64::new(0x9E37_79B9_7F4A_7C15).shuffle(&mut v);
    v
}

#[derive(Clone, Copy, Debug)]
enum Engine {
    Kvdb,
    KvdbMmap,
    Jammdb,
    Redb,
}

const ENGINES: [Engine; 4] = [Engine::Kvdb, Engine::KvdbMmap, Engine::Jammdb, Engine::Redb];

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Kvdb => "kvdb",
            Engine::KvdbMmap => "kvdb-mmap",
            Engine::Jammdb => "jammdb",
            Engine::Redb => "redb",
        }
    }
}

fn fresh(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

fn kvdb_create(path: &Path, sync: bool) -> kvdb::Db<kvdb::FilePager> {
    let mut pager = kvdb::FilePager::open(path).unwrap();
    if !sync {
        pager = pager.without_sync();
    }
    kvdb::Db::create(pager, kvdb::Options::default()).unwrap()
}

fn kvdb_mmap_create(path: &Path, sync: bool) -> kvdb::Db<kvdb_mmap::MmapPager> {
    let mut pager = kvdb_mmap::MmapPager::open(path).unwrap();
    if !sync {
        pager = pager.without_sync();
    }
    kvdb::Db::create(pager, kvdb::Options::default()).unwrap()
}

fn redb_create(path: &Path) -> redb::Database {
    redb::Database::create(path).unwrap()
}

/// Insert keys `keys` with small values in one transaction, committed (with sync).
fn insert_one_tx(engine: Engine, path: &Path, keys: impl Iterator<Item = u64>) {
    match engine {
        Engine::Kvdb => kvdb_insert(&kvdb_create(path, true), keys),
        Engine::KvdbMmap => kvdb_insert(&kvdb_mmap_create(path, true), keys),
        Engine::Jammdb => {
            let db = jammdb::DB::open(path).unwrap();
            let tx = db.tx(true).unwrap();
            let b = tx.create_bucket("t").unwrap();
            for i in keys {
                b.put(i.to_be_bytes().to_vec(), value(i).to_vec()).unwrap();
            }
            tx.commit().unwrap();
        }
        Engine::Redb => {
            let db = redb_create(path);
            let tx = db.begin_write().unwrap();
            {
                let mut t = tx.open_table(TABLE).unwrap();
                for i in keys {
                    t.insert(&i.to_be_bytes()[..], &value(i)[..]).unwrap();
                }
            }
            tx.commit().unwrap();
        }
    }
}

fn kvdb_insert<P: Pager>(db: &kvdb::Db<P>, keys: impl Iterator<Item = u64>) {
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"t").unwrap();
    b.put_many(keys.map(|i| (i.to_be_bytes(), value(i))))
        .unwrap();
    tx.commit().unwrap();
}

fn kvdb_small_txs<P: Pager>(db: &kvdb::Db<P>) {
    for i in 0..SMALL_TXS {
        let tx = db.begin_write().unwrap();
        let b = tx.get_or_create_bucket(b"t").unwrap();
        b.put(&i.to_be_bytes(), &value(i)).unwrap();
        tx.commit().unwrap();
    }
}

fn small_txs(engine: Engine, path: &Path, sync: bool) {
    match engine {
        Engine::Kvdb => kvdb_small_txs(&kvdb_create(path, sync)),
        Engine::KvdbMmap => kvdb_small_txs(&kvdb_mmap_create(path, sync)),
        Engine::Jammdb => {
            let db = jammdb::DB::open(path).unwrap();
            for i in 0..SMALL_TXS {
                let tx = db.tx(true).unwrap();
                let b = tx.get_or_create_bucket("t").unwrap();
                b.put(i.to_be_bytes().to_vec(), value(i).to_vec()).unwrap();
                tx.commit().unwrap();
            }
        }
        Engine::Redb => {
            let db = redb_create(path);
            for i in 0..SMALL_TXS {
                let mut tx = db.begin_write().unwrap();
                if !sync {
                    tx.set_durability(redb::Durability::None);
                }
                {
                    let mut t = tx.open_table(TABLE).unwrap();
                    t.insert(&i.to_be_bytes()[..], &value(i)[..]).unwrap();
                }
                tx.commit().unwrap();
            }
        }
    }
}

fn kvdb_write_big<P: Pager>(db: &kvdb::Db<P>, values: &[Vec<u8>]) {
    let tx = db.begin_write().unwrap();
    let b = tx.create_bucket(b"t").unwrap();
    for (i, v) in values.iter().enumerate() {
        b.put(&(i as u64).to_be_bytes(), v).unwrap();
    }
    tx.commit().unwrap();
}

fn write_big(engine: Engine, path: &Path) {
    let values: Vec<Vec<u8>> = (0..BIG_VALUES).map(big_value).collect();
    match engine {
        Engine::Kvdb => kvdb_write_big(&kvdb_create(path, true), &values),
        Engine::KvdbMmap => kvdb_write_big(&kvdb_mmap_create(path, true), &values),
        Engine::Jammdb => {
            let db = jammdb::DB::open(path).unwrap();
            let tx = db.tx(true).unwrap();
            let b = tx.create_bucket("t").unwrap();
            for (i, v) in values.iter().enumerate() {
                b.put((i as u64).to_be_bytes().to_vec(), v.as_slice())
                    .unwrap();
            }
            tx.commit().unwrap();
        }
        Engine::Redb => {
            let db = redb_create(path);
            let tx = db.begin_write().unwrap();
            {
                let mut t = tx.open_table(TABLE).unwrap();
                for (i, v) in values.iter().enumerate() {
                    t.insert(&(i as u64).to_be_bytes()[..], v.as_slice())
                        .unwrap();
                }
            }
            tx.commit().unwrap();
        }
    }
}

/// An opened database of one engine, for the read benchmarks.
enum Opened {
    Kvdb(Box<kvdb::Db<kvdb::FilePager>>),
    KvdbMmap(Box<kvdb::Db<kvdb_mmap::MmapPager>>),
    Jammdb(jammdb::DB),
    Redb(redb::Database),
}

fn open(engine: Engine, path: &Path) -> Opened {
    match engine {
        Engine::Kvdb => Opened::Kvdb(Box::new(
            kvdb::Db::open(kvdb::FilePager::open(path).unwrap()).unwrap(),
        )),
        Engine::KvdbMmap => Opened::KvdbMmap(Box::new(
            kvdb::Db::open(kvdb_mmap::MmapPager::open(path).unwrap()).unwrap(),
        )),
        Engine::Jammdb => Opened::Jammdb(jammdb::DB::open(path).unwrap()),
        Engine::Redb => Opened::Redb(redb::Database::open(path).unwrap()),
    }
}

fn kvdb_get_all<P: Pager>(db: &kvdb::Db<P>, keys: &[u64], buf: &mut [u8]) -> usize {
    let mut total = 0;
    let tx = db.begin_read().unwrap();
    let b = tx.get_bucket(b"t").unwrap();
    for &i in keys {
        let v = b.get(&i.to_be_bytes()).unwrap().unwrap();
        buf[..v.len()].copy_from_slice(&v);
        total += v.len();
    }
    total
}

/// Get every key of `keys`; copies each value into `buf` (the dbfs read path: one copy).
fn get_all(db: &Opened, keys: &[u64], buf: &mut [u8]) -> usize {
    let mut total = 0;
    match db {
        Opened::Kvdb(db) => total = kvdb_get_all(db, keys, buf),
        Opened::KvdbMmap(db) => total = kvdb_get_all(db, keys, buf),
        Opened::Jammdb(db) => {
            let tx = db.tx(false).unwrap();
            let b = tx.get_bucket("t").unwrap();
            for &i in keys {
                let d = b.get(i.to_be_bytes()).unwrap();
                let v = d.kv().value();
                buf[..v.len()].copy_from_slice(v);
                total += v.len();
            }
        }
        Opened::Redb(db) => {
            let tx = db.begin_read().unwrap();
            let t = tx.open_table(TABLE).unwrap();
            for &i in keys {
                let g = t.get(&i.to_be_bytes()[..]).unwrap().unwrap();
                let v = g.value();
                buf[..v.len()].copy_from_slice(v);
                total += v.len();
            }
        }
    }
    total
}

fn kvdb_scan<P: Pager>(db: &kvdb::Db<P>) -> usize {
    let mut total = 0;
    let tx = db.begin_read().unwrap();
    let b = tx.get_bucket(b"t").unwrap();
    // Entries lent by the cursor (key and value borrowed from its leaf page), as jammdb's and
    // redb's iterators lend theirs.
    let mut c = b.cursor();
    while let Some(entry) = c.next_borrowed().unwrap() {
        total += entry.key().len() + entry.value().map_or(0, <[u8]>::len);
    }
    total
}

fn scan(db: &Opened) -> usize {
    let mut total = 0;
    match db {
        Opened::Kvdb(db) => total = kvdb_scan(db),
        Opened::KvdbMmap(db) => total = kvdb_scan(db),
        Opened::Jammdb(db) => {
            let tx = db.tx(false).unwrap();
            let b = tx.get_bucket("t").unwrap();
            for d in b.cursor() {
                let (k, v) = d.kv().kv();
                total += k.len() + v.len();
            }
        }
        Opened::Redb(db) => {
            let tx = db.begin_read().unwrap();
            let t = tx.open_table(TABLE).unwrap();
            for r in t.iter().unwrap() {
                let (k, v) = r.unwrap();
                total += k.value().len() + v.value().len();
            }
        }
    }
    total
}

/// Delete every other key of the 100k-key store in one transaction (fills the freelist).
fn kvdb_delete_half<P: Pager>(db: &kvdb::Db<P>) {
    let tx = db.begin_write().unwrap();
    let b = tx.get_bucket(b"t").unwrap();
    for i in (0..N).step_by(2) {
        b.delete(&i.to_be_bytes()).unwrap();
    }
    tx.commit().unwrap();
}

fn delete_half(engine: Engine, path: &Path) {
    match engine {
        Engine::Kvdb => {
            kvdb_delete_half(&kvdb::Db::open(kvdb::FilePager::open(path).unwrap()).unwrap())
        }
        Engine::KvdbMmap => {
            kvdb_delete_half(&kvdb::Db::open(kvdb_mmap::MmapPager::open(path).unwrap()).unwrap())
        }
        Engine::Jammdb => {
            let db = jammdb::DB::open(path).unwrap();
            let tx = db.tx(true).unwrap();
            let b = tx.get_bucket("t").unwrap();
            for i in (0..N).step_by(2) {
                b.delete(i.to_be_bytes()).unwrap();
            }
            tx.commit().unwrap();
        }
        Engine::Redb => {
            let db = redb::Database::open(path).unwrap();
            let tx = db.begin_write().unwrap();
            {
                let mut t = tx.open_table(TABLE).unwrap();
                for i in (0..N).step_by(2) {
                    t.remove(&i.to_be_bytes()[..]).unwrap();
                }
            }
            tx.commit().unwrap();
        }
    }
}

/// Begin and end one read transaction.
fn begin_read(db: &Opened) {
    match db {
        Opened::Kvdb(db) => drop(black_box(db.begin_read().unwrap())),
        Opened::KvdbMmap(db) => drop(black_box(db.begin_read().unwrap())),
        Opened::Jammdb(db) => drop(black_box(db.tx(false).unwrap())),
        Opened::Redb(db) => drop(black_box(db.begin_read().unwrap())),
    }
}

fn timed(iters: u64, mut f: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let t = Instant::now();
        f();
        total += t.elapsed();
    }
    total
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(
        std::env::var_os("KVDB_BENCH_DIR").unwrap_or_else(|| std::env::temp_dir().into()),
    )
    .unwrap();
    let dir = dir.path();
    let order = shuffled();

    let mut g = c.benchmark_group("seq_insert_100k_one_tx");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    for e in ENGINES {
        g.bench_function(BenchmarkId::from_parameter(e.name()), |b| {
            b.iter_custom(|iters| {
                timed(iters, || {
                    let p = fresh(dir, e.name());
                    insert_one_tx(e, &p, 0..N);
                })
            })
        });
    }
    g.finish();

    for sync in [true, false] {
        let mut g = c.benchmark_group(if sync {
            "1000_small_txs_sync"
        } else {
            "1000_small_txs_nosync"
        });
        g.sample_size(10);
        g.sampling_mode(SamplingMode::Flat);
        g.sampling_mode(SamplingMode::Flat);
        for e in ENGINES {
            if !sync && matches!(e, Engine::Jammdb) {
                continue; // jammdb always fsyncs on commit.
            }
            g.bench_function(BenchmarkId::from_parameter(e.name()), |b| {
                b.iter_custom(|iters| {
                    timed(iters, || {
                        let p = fresh(dir, e.name());
                        small_txs(e, &p, sync);
                    })
                })
            });
        }
        g.finish();
    }

    // Read benchmarks run on a database built once per engine, then reopened.
    let mut g = c.benchmark_group("random_get_100k");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    let mut buf = vec![0u8; BIG];
    for e in ENGINES {
        let p = fresh(dir, e.name());
        insert_one_tx(e, &p, 0..N);
        let db = open(e, &p);
        g.bench_function(BenchmarkId::from_parameter(e.name()), |b| {
            b.iter(|| black_box(get_all(&db, &order, &mut buf)))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("full_scan_100k");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    for e in ENGINES {
        let p = dir.join(e.name());
        let db = open(e, &p);
        g.bench_function(BenchmarkId::from_parameter(e.name()), |b| {
            b.iter(|| black_box(scan(&db)))
        });
    }
    g.finish();

    // Starting a read transaction on a store with a long freelist (half of 100k keys deleted).
    let mut g = c.benchmark_group("begin_read_tx_big_freelist");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    for e in ENGINES {
        let p = dir.join(e.name());
        delete_half(e, &p);
        let db = open(e, &p);
        g.bench_function(BenchmarkId::from_parameter(e.name()), |b| {
            b.iter(|| begin_read(&db))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("write_256x64KiB_one_tx");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    for e in ENGINES {
        g.bench_function(BenchmarkId::from_parameter(e.name()), |b| {
            b.iter_custom(|iters| {
                timed(iters, || {
                    let p = fresh(dir, e.name());
                    write_big(e, &p);
                })
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("read_256x64KiB");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    let keys: Vec<u64> = (0..BIG_VALUES).collect();
    for e in ENGINES {
        let p = fresh(dir, e.name());
        write_big(e, &p);
        let db = open(e, &p);
        g.bench_function(BenchmarkId::from_parameter(e.name()), |b| {
            b.iter(|| black_box(get_all(&db, &keys, &mut buf)))
        });
    }
    g.finish();
}

criterion_group!(kv, benches);
criterion_main!(kv);
