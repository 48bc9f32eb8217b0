#!/usr/bin/env python3
"""Write the seed corpus of the mount_walk target (see tests/mutate/mod.rs).

Input: one flags byte (bit 0: re-seal the meta checksums), then 6-byte records: kind, 24-bit
offset (LE), two value bytes. Kinds: 0 xor, 1 set byte, 2 set u16, 3 set u64 (small value),
4 set u32, 5 set a boundary u64, 6 copy a 16-byte slot.
"""
import os
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "corpus/mount_walk"
os.makedirs(out, exist_ok=True)
PAGE = 4096


def rec(kind, off, v0=0, v1=0):
    return bytes([kind, off & 0xFF, (off >> 8) & 0xFF, (off >> 16) & 0xFF, v0, v1])


seeds = {
    "none": b"\x00",
    # A node page's header and first slot (page 2 onwards holds nodes).
    "node-header": b"\x00" + rec(1, 2 * PAGE + 2, 0xFF) + rec(3, 2 * PAGE + 16, 1, 0),
    "slot-copy": b"\x00" + rec(6, 3 * PAGE + 32, 0x30, 0x01),
    # Meta fields with the checksum re-sealed (kvdb::page::Meta: root at 24, freelist at 40,
    # freelist_pages at 48, page_count at 56).
    "meta-root": b"\x01" + rec(3, 24, 2, 0) + rec(3, PAGE + 24, 2, 0),
    "meta-count": b"\x01" + rec(5, 56, 1) + rec(5, PAGE + 56, 1),
    "meta-freelist": b"\x01" + rec(3, 40, 3, 0) + rec(3, PAGE + 48, 9, 0),
    "overflow-len": b"\x00" + rec(5, 5 * PAGE + 24, 2),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {out}")
