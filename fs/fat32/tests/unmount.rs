//! Power-off's unmount leaves a FAT volume as a clean unmount does: fsstress on /fat found
//! `fsck.fat -n` complaining after every boot (the dirty flag fatfs sets at the first write
//! still set, the FSInfo free-cluster count stale), because the kernel only synced.

use std::sync::Arc;

use fat32::Fat32Fs;
use vfs::{BlockDevice, FileSystem, FileType, NewNode, RamDisk, ZeroClock};

fn sector(disk: &RamDisk, n: u64) -> Vec<u8> {
    let mut buf = vec![0u8; 512];
    disk.read_sectors(n, &mut buf).unwrap();
    buf
}

/// Bit 0 of BS_Reserved1 (offset 0x41 of a FAT32 boot sector): the volume is dirty.
fn dirty(disk: &RamDisk) -> bool {
    sector(disk, 0)[0x41] & 1 != 0
}

/// The free-cluster count of the FSInfo sector (its number at offset 48 of the boot sector).
fn fsinfo_free(disk: &RamDisk) -> u32 {
    let boot = sector(disk, 0);
    let info = sector(disk, u64::from(u16::from_le_bytes([boot[48], boot[49]])));
    u32::from_le_bytes([info[488], info[489], info[490], info[491]])
}

#[test]
fn unmount_clears_the_dirty_flag_and_writes_fsinfo() {
    let disk = Arc::new(RamDisk::new(64 * 1024 * 1024));
    Fat32Fs::format(disk.clone(), "TEST").unwrap();
    let fs = Fat32Fs::mount(disk.clone(), Arc::new(ZeroClock)).unwrap();
    let root = fs.root().unwrap();
    let f = root
        .create("big", &NewNode::new(FileType::Regular, 0o644))
        .unwrap();
    f.write_at(0, &vec![7u8; 300 * 1024]).unwrap();
    fs.sync().unwrap();
    // A sync writes the data back but is no unmount: the volume is still in use.
    assert!(
        dirty(&disk),
        "fatfs marks the volume dirty at the first write"
    );
    let free = fs.statfs().unwrap().blocks_free as u32;

    fs.unmount().unwrap();
    assert!(!dirty(&disk), "the dirty flag is cleared by the unmount");
    assert_eq!(
        fsinfo_free(&disk),
        free,
        "FSInfo holds the free-cluster count"
    );
    // The data is there for the next mount, which sees the count too.
    let again = Fat32Fs::mount(disk.clone(), Arc::new(ZeroClock)).unwrap();
    assert_eq!(again.statfs().unwrap().blocks_free as u32, free);
    let big = again.root().unwrap().lookup("big").unwrap();
    let mut buf = vec![0u8; 300 * 1024];
    assert_eq!(big.read_at(0, &mut buf).unwrap(), buf.len());
    assert!(buf.iter().all(|&b| b == 7));
}
