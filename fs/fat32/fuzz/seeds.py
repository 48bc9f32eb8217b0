#!/usr/bin/env python3
"""Write the seed corpus of the mount_walk target (mutation records, see tests/mutate/mod.rs).

Record: kind, region, 24-bit offset (LE), two value bytes. Regions: 0 reserved sectors, 1 FAT1
head, 2 FAT2 head, 3 data head (directories, small files), 4 whole device.
"""
import os
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "corpus/mount_walk"
os.makedirs(out, exist_ok=True)


def rec(kind, region, off, v0=0, v1=0):
    return bytes([kind, region, off & 0xFF, (off >> 8) & 0xFF, (off >> 16) & 0xFF, v0, v1])


seeds = {
    "none": b"",
    # FAT[2] (the root) pointing at itself, and at a later cluster.
    "root-loop": rec(3, 1, 8, 2, 0),
    "root-next": rec(3, 1, 8, 0x58, 0x02),
    # Some chain entries made loops or end markers or bad.
    "chain-self": rec(3, 1, 4 * 20, 20, 0) + rec(3, 1, 4 * 60, 50, 0),
    "chain-bad": rec(4, 1, 4 * 30, 0, 2) + rec(4, 1, 4 * 31, 0, 1),
    # Boot sector: sectors per cluster, reserved sectors, FSInfo free count.
    "bpb": rec(1, 0, 13, 2) + rec(2, 0, 14, 0x21, 0),
    "fsinfo": rec(4, 0, 512 + 488, 0, 5),
    # Directory entries in the root: first cluster fields, size, attributes, a copied entry.
    "dirent": rec(2, 3, 32 + 26, 7, 0) + rec(4, 3, 64 + 28, 0, 6) + rec(1, 3, 96 + 11, 0x10),
    "dup-entry": rec(5, 3, 160, 3, 0),
    # Second FAT copy differs.
    "fat2": rec(0, 2, 40, 0x55),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {out}")
