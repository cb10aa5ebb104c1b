#!/usr/bin/env python3
# Writes the hostile snapshot archives of tests/e2e/snapshot_hostile_api.sh into OUT_DIR, one .tar (or
# .tar.gz) per case, aimed at OUTSIDE (a folder the unpacker must never touch). Usage: OUT_DIR OUTSIDE [big]
import gzip, io, os, sys, tarfile

out, outside = sys.argv[1], sys.argv[2]
big = len(sys.argv) > 3 and sys.argv[3] == "big"
up = "../" * 40 + outside.lstrip("/")  # from any folder under the home, back to / and down to OUTSIDE
os.makedirs(out, exist_ok=True)


def member(t, kind, name, extra="", mode=0o644, size=None):
    ti = tarfile.TarInfo(name)
    ti.mode = mode
    data = b""
    if kind == "f":
        data = extra if isinstance(extra, bytes) else extra.encode()
    elif kind == "d":
        ti.type = tarfile.DIRTYPE
    elif kind == "l":
        ti.type, ti.linkname = tarfile.SYMTYPE, extra
    elif kind == "h":
        ti.type, ti.linkname = tarfile.LNKTYPE, extra
    elif kind == "c":
        ti.type, ti.devmajor, ti.devminor = tarfile.CHRTYPE, 1, 3
    elif kind == "b":
        ti.type, ti.devmajor, ti.devminor = tarfile.BLKTYPE, 8, 0
    elif kind == "p":
        ti.type = tarfile.FIFOTYPE
    ti.size = len(data) if size is None else size
    t.addfile(ti, io.BytesIO(data) if data else None)


def write(name, entries, fmt=tarfile.GNU_FORMAT):
    with tarfile.open(os.path.join(out, name + ".tar"), "w", format=fmt) as t:
        for e in entries:
            member(t, *e)


write("ok", [("f", "ok.txt", "fine\n"), ("f", "suid.sh", "#!/bin/sh\n", 0o6755)])
write("dotdot", [("f", up + "/dotdot.txt", "x")])
write("absolute", [("f", outside + "/absolute.txt", "x")])
write("symlink_out", [("l", "link", up)])
write("symlink_absolute", [("l", "link", outside)])
write("symlink_then_file", [("d", "d", ""), ("l", "d/s", "../" + "x/../" * 3 + ".."), ("f", "d/s/../escape.txt", "x")])
write("symlink_then_write", [("l", "s", "sub"), ("d", "sub", ""), ("l", "sub/up", ".."), ("l", "s2", "s/up/s/up/.."),
                             ("f", "s2/through.txt", "x")])
write("symlink_dir_then_dir", [("l", "s", "."), ("l", "s/t", "../.."), ("d", "s/t/made", "")])
write("hardlink_out", [("h", "h", outside + "/target")])
write("hardlink_up", [("h", "h", up + "/target")])
write("hardlink_missing", [("h", "h", "nothere")])
write("long_component", [("f", "n" * 300, "x")])
write("long_path", [("f", "/".join(["d" * 200] * 30), "x")], tarfile.PAX_FORMAT)
# A link whose own path is exactly 4096 bytes, lexically inside, that leaves through a chain of links:
# the kernel's check of it fails with ENAMETOOLONG, which must not count as "inside" (issue 22, item 6).
write("symlink_4096", [("d", "d", ""), ("l", "d/l1", ".."),
                       ("l", ("p" * 250 + "/") * 16 + "q" * 80, "../" * 16 + "d/l1/d/l1/..")], tarfile.PAX_FORMAT)
write("duplicate", [("f", "same", "one"), ("f", "same", "two")])
write("duplicate_dir_file", [("d", "x", ""), ("f", "x", "two")])
write("chardev", [("c", "null", "")])
write("blockdev", [("b", "sda", "")])
write("fifo", [("p", "fifo", "")])

# A hard link entry that carries data. libarchive honours the data of a link only in pax archives with an
# extended header (as POSIX allows), so the entry gets one.
with tarfile.open(os.path.join(out, "hardlink_with_data.tar"), "w", format=tarfile.PAX_FORMAT) as t:
    member(t, "f", "a", "original")
    ti = tarfile.TarInfo("b")
    ti.type, ti.linkname, ti.size, ti.pax_headers = tarfile.LNKTYPE, "a", 8, {"comment": "link with data"}
    t.addfile(ti, io.BytesIO(b"OVERWRIT"))

# 10 GB declared, no data: a sparse file's size must be refused before a byte is written.
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
    ti = tarfile.TarInfo("sparse.bin")
    ti.size = 10 << 30
    t.fileobj.write(ti.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape"))
open(os.path.join(out, "sparse_10g.tar"), "wb").write(buf.getvalue() + bytes(1024))

if big:
    # A compression bomb: 256 MiB of zeros in a ~250 KB gzip (ratio ~1000:1).
    zeros = bytes(1 << 20)
    with gzip.open(os.path.join(out, "bomb.tar.gz"), "wb", compresslevel=1) as g:
        with tarfile.open(fileobj=g, mode="w|", format=tarfile.GNU_FORMAT) as t:
            ti = tarfile.TarInfo("zeros.bin")
            ti.size = 256 << 20

            class Zeros(io.RawIOBase):
                left = 256 << 20
                def readinto(self, b):
                    n = min(len(b), self.left, len(zeros))
                    b[:n] = zeros[:n]
                    self.left -= n
                    return n
            t.addfile(ti, Zeros())
    # Many tiny entries: 20,000 one-byte files (the limit under test is set far lower).
    with tarfile.open(os.path.join(out, "many_entries.tar.gz"), "w:gz", compresslevel=1) as t:
        for i in range(20000):
            member(t, "f", "f/%05d" % i, "x")
print("\n".join(sorted(os.listdir(out))))
