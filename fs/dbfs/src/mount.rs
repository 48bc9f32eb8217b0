//! Formatting and mounting. [`DbFs::mkfs`] writes the buckets, the superblock and the root
//! directory in one transaction; [`DbFs::mount_checked`] checks the superblock against what this
//! build understands ([`MountError`] says why an image is refused), builds the empty per-mount
//! [`State`], and frees the orphans a crash left behind.
//!
//! Locks: none of dbfs's own before the `DbFs` exists; freeing orphans is an ordinary
//! [`DbFs::write_op`] (writer lock, then `state`).

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

use kvdb::sync::Mutex;
use kvdb::{Db, Pager};
use vfs::{Clock, FileType, Timestamp, VfsError, VfsResult};

use crate::error::kv;
use crate::format::{self, bucket, ino_key, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE, MIN_PAGE_SIZE};
use crate::format::{Inode, Superblock, FORMAT_VERSION, ROOT_INO};
use crate::mounted::DbFs;
use crate::snapshot_cache::{ChunkLocs, SnapshotInodes, SnapshotNames};
use crate::state::{PendingMap, ReadMemo, State, WriteBack};
use crate::tuning::{DEFAULT_CHUNK_SIZE, DEFAULT_DIRTY_LIMIT, DIRECT_WRITE_MIN};

/// Parameters of [`DbFs::mkfs`], recorded in the superblock.
#[derive(Clone, Debug)]
pub struct MkfsOptions {
    /// kvdb page size: a power of two in 4 KiB..=64 KiB.
    pub page_size: usize,
    /// Bytes per data chunk: a power of two in 512..=1 MiB.
    pub chunk_size: u32,
    /// Volume label, at most 64 bytes.
    pub label: String,
    /// Volume uuid (the caller supplies randomness; no_std has none).
    pub uuid: [u8; 16],
    /// Permission bits of the root directory (masked to 0o7777).
    pub root_perm: u32,
    /// Owner of the root directory.
    pub root_uid: u32,
    /// Group of the root directory.
    pub root_gid: u32,
    /// Creation time, and the root directory's times.
    pub time: Timestamp,
}

impl Default for MkfsOptions {
    fn default() -> Self {
        MkfsOptions {
            page_size: 4096,
            chunk_size: DEFAULT_CHUNK_SIZE,
            label: String::new(),
            uuid: [0; 16],
            root_perm: 0o755,
            root_uid: 0,
            root_gid: 0,
            time: Timestamp::default(),
        }
    }
}

/// Why [`DbFs::mount_checked`] refused an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MountError {
    /// The kvdb store could not be opened (not a kvdb image, truncated, corrupt, I/O).
    Store(kvdb::Error),
    /// A kvdb store without a dbfs superblock.
    NotDbfs,
    /// A dbfs format version this code does not know.
    UnsupportedVersion(u32),
    /// Feature bits this code does not know.
    UnknownFeatures(u32),
    /// The superblock's page size disagrees with the store's.
    PageSizeMismatch {
        /// The page size the superblock records.
        superblock: u32,
        /// The page size of the kvdb store.
        store: usize,
    },
    /// A chunk size outside 512..=1 MiB or not a power of two.
    BadChunkSize(u32),
    /// A bucket or the root directory is missing or damaged.
    Damaged(&'static str),
}

impl fmt::Display for MountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MountError::Store(e) => write!(f, "cannot open the kvdb store: {e}"),
            MountError::NotDbfs => write!(f, "not a dbfs image (no dbfs superblock)"),
            MountError::UnsupportedVersion(v) => {
                write!(f, "dbfs format version {v} is not supported (this build reads version {FORMAT_VERSION})")
            }
            MountError::UnknownFeatures(b) => write!(f, "image uses unknown dbfs features {b:#x}"),
            MountError::PageSizeMismatch { superblock, store } => {
                write!(
                    f,
                    "superblock page size {superblock} differs from the store's {store}"
                )
            }
            MountError::BadChunkSize(c) => write!(f, "unsupported chunk size {c}"),
            MountError::Damaged(what) => write!(f, "damaged image: {what}"),
        }
    }
}

impl From<MountError> for VfsError {
    fn from(e: MountError) -> VfsError {
        match e {
            MountError::Store(e) => kv(e),
            MountError::Damaged(_) => VfsError::Corrupted,
            _ => VfsError::InvalidInput,
        }
    }
}

impl<P: Pager> DbFs<P> {
    /// Format `pager` as an empty dbfs and give it back (mount it with [`DbFs::mount`]).
    pub fn mkfs(pager: P, opts: MkfsOptions) -> VfsResult<P> {
        if !opts.page_size.is_power_of_two() || !(MIN_PAGE_SIZE..=65536).contains(&opts.page_size) {
            return Err(VfsError::InvalidInput);
        }
        if !valid_chunk_size(opts.chunk_size) || opts.label.len() > format::LABEL_MAX {
            return Err(VfsError::InvalidInput);
        }
        let db = Db::create(
            pager,
            kvdb::Options {
                page_size: opts.page_size,
            },
        )
        .map_err(kv)?;
        {
            let tx = db.begin_write().map_err(kv)?;
            for name in bucket::ALL {
                tx.create_bucket(name).map_err(kv)?;
            }
            let sb = Superblock {
                version: FORMAT_VERSION,
                page_size: opts.page_size as u32,
                chunk_size: opts.chunk_size,
                incompat: 0,
                uuid: opts.uuid,
                label: opts.label.clone(),
                next_ino: ROOT_INO + 1,
                inode_count: 1,
                created: opts.time,
            };
            tx.get_bucket(bucket::META)
                .map_err(kv)?
                .put(format::SUPERBLOCK_KEY, &sb.encode())
                .map_err(kv)?;
            let root = Inode {
                ftype: FileType::Directory,
                perm: opts.root_perm & 0o7777,
                uid: opts.root_uid,
                gid: opts.root_gid,
                nlink: 2,
                size: 0,
                alloc_bytes: 0,
                rdev: 0,
                atime: opts.time,
                mtime: opts.time,
                ctime: opts.time,
                parent: ROOT_INO,
                next_cookie: 2,
            };
            tx.get_bucket(bucket::INODES)
                .map_err(kv)?
                .put(&ino_key(ROOT_INO), &root.encode())
                .map_err(kv)?;
            tx.commit().map_err(kv)?;
        }
        Ok(db.into_pager())
    }

    /// Mount a dbfs image; see [`DbFs::mount_checked`] for why it may be refused.
    pub fn mount(pager: P, clock: Arc<dyn Clock>) -> VfsResult<Arc<DbFs<P>>> {
        Self::mount_checked(pager, clock).map_err(VfsError::from)
    }

    /// Mount, saying precisely why an image is refused. Frees orphans a crash left behind
    /// (best effort: a read-only pager keeps them).
    pub fn mount_checked(pager: P, clock: Arc<dyn Clock>) -> Result<Arc<DbFs<P>>, MountError> {
        let db = Db::open(pager).map_err(MountError::Store)?;
        let params = Self::check_image(&db)?;
        let chunk_size = u64::from(params.chunk_size);
        let db_direct_writes = db.pager().direct_writes();
        let fs = Arc::new_cyclic(|me| DbFs {
            db,
            clock,
            params,
            chunk_size,
            state: Mutex::new(State {
                wb: WriteBack {
                    pending: PendingMap::default(),
                    dirty_bytes: 0,
                    reserved: 0,
                    limit: DEFAULT_DIRTY_LIMIT,
                    since: None,
                },
                open: BTreeMap::new(),
                noatime: false,
                fsync_wanted: BTreeMap::new(),
                icache: SnapshotInodes::default(),
                names: SnapshotNames::default(),
                read_memo: ReadMemo::default(),
                chunk_locs: ChunkLocs::default(),
                direct_write_min: if db_direct_writes {
                    DIRECT_WRITE_MIN
                } else {
                    usize::MAX
                },
                direct_busy: Vec::new(),
                committing: Vec::new(),
                reshaping: Vec::new(),
                not_durable: BTreeMap::new(),
                direct_seq: 0,
                sync_metadata: false,
                unsynced_since: None,
                write_errors: BTreeMap::new(),
            }),
            me: me.clone(),
        });
        let _ = fs.free_orphans();
        Ok(fs)
    }

    fn check_image(db: &Db<P>) -> Result<Superblock, MountError> {
        let tx = db.begin_read().map_err(MountError::Store)?;
        let meta = match tx.get_bucket(bucket::META) {
            Ok(b) => b,
            Err(kvdb::Error::BucketNotFound) | Err(kvdb::Error::IncompatibleValue) => {
                return Err(MountError::NotDbfs)
            }
            Err(e) => return Err(MountError::Store(e)),
        };
        let raw = meta
            .get(format::SUPERBLOCK_KEY)
            .map_err(MountError::Store)?
            .ok_or(MountError::NotDbfs)?;
        let sb = Superblock::decode(&raw).ok_or(MountError::NotDbfs)?;
        if sb.version != FORMAT_VERSION {
            return Err(MountError::UnsupportedVersion(sb.version));
        }
        if sb.incompat != 0 {
            return Err(MountError::UnknownFeatures(sb.incompat));
        }
        if sb.page_size as usize != db.page_size() {
            return Err(MountError::PageSizeMismatch {
                superblock: sb.page_size,
                store: db.page_size(),
            });
        }
        if !valid_chunk_size(sb.chunk_size) {
            return Err(MountError::BadChunkSize(sb.chunk_size));
        }
        for name in bucket::ALL {
            if tx.get_bucket(name).is_err() {
                return Err(MountError::Damaged("a dbfs bucket is missing"));
            }
        }
        let root = tx
            .get_bucket(bucket::INODES)
            .and_then(|b| b.get(&ino_key(ROOT_INO)))
            .map_err(MountError::Store)?
            .ok_or(MountError::Damaged("no root directory"))?;
        match Inode::decode(&root) {
            Ok(i) if i.ftype == FileType::Directory => Ok(sb),
            _ => Err(MountError::Damaged("root directory record")),
        }
    }

    fn free_orphans(&self) -> VfsResult<()> {
        let orphans: Vec<u64> = {
            let tx = self.db.begin_read().map_err(kv)?;
            let b = tx.get_bucket(bucket::ORPHANS).map_err(kv)?;
            let mut c = b.cursor();
            let mut out = Vec::new();
            let mut e = c.first().map_err(kv)?;
            while let Some(entry) = e {
                out.extend(format::be_u64(entry.key()));
                e = c.next().map_err(kv)?;
            }
            out
        };
        if orphans.is_empty() {
            return Ok(());
        }
        self.write_op(|t| {
            for ino in orphans {
                match t.inode(ino) {
                    Ok(i) if i.nlink == 0 => t.free_inode(ino)?,
                    Ok(_) => {
                        t.bucket(bucket::ORPHANS)?
                            .delete(&ino_key(ino))
                            .map_err(kv)?;
                    }
                    Err(VfsError::NotFound) => {
                        t.bucket(bucket::ORPHANS)?
                            .delete(&ino_key(ino))
                            .map_err(kv)?;
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })
    }
}

fn valid_chunk_size(c: u32) -> bool {
    c.is_power_of_two() && (MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE).contains(&c)
}
