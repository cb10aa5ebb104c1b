// The tar headers of a snapshot archive, written by hand so the archive can be streamed straight into
// the compressor threads (snapshot/archive.cc). POSIX ustar, with a pax extended header only where ustar
// cannot say it (a path or link target too long for ustar, a size of 8 GiB or more), as libarchive's
// "pax restricted" format did before. Any tar reader (libarchive, GNU tar) reads it.
#pragma once
#include <string>

#include "core/snapshot/snapshot.h"

namespace air {

constexpr size_t kTarBlock = 512;

// Appends f's header block(s) to out: fixed metadata (mtime 0, uid/gid 0, no owner names, mode
// 0644/0755, symlinks 0777). The content (f.size bytes, zero-padded to 512) follows them.
void append_tar_header(std::string& out, const SnapshotFile& f);

// Zero bytes after a file of `size` bytes up to the next 512-byte boundary.
inline size_t tar_padding(uint64_t size) { return static_cast<size_t>((kTarBlock - size % kTarBlock) % kTarBlock); }

// The end-of-archive marker: two zero blocks.
constexpr size_t kTarTrailer = 2 * kTarBlock;

}  // namespace air
