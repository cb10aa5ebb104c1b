// libFuzzer target: the snapshot unpacker (core/snapshot_unpack) on hostile archives. Input byte 0 picks
// the mode: even -> the rest is archive bytes as uploaded (tar, gzip, zstd); odd -> the rest is a list of
// entries ("<type><mode> <path>\t<link target or data>\n", types f d l h c p) written into a real tar
// first, so mutations reach the unpacker's path and link rules rather than dying in tar checksums.
// Invariants: unpack succeeds or throws air::Error; nothing appears or changes outside the destination;
// a refused archive leaves no destination and no temporary folder; every unpacked symlink resolves inside.
#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/base/error.h"
#include "core/snapshot/snapshot.h"
#include "tests/fuzz/fuzz_check.h"

namespace fs = std::filesystem;

namespace {

fs::path g_box;  // <tmp>/box: holds the archive, the destination, and a sentinel file outside it

void add_entry(struct archive* w, std::string_view line) {
  if (line.size() < 3) return;
  char type = line[0];
  unsigned mode = static_cast<unsigned char>(line[1]);
  std::string_view rest = line.substr(2);
  size_t tab = rest.find('\t');
  std::string path(rest.substr(0, tab));
  std::string extra(tab == std::string_view::npos ? std::string_view() : rest.substr(tab + 1));
  struct archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, path.c_str());
  archive_entry_set_perm(e, (mode & 1 ? 04755 : 0644) | (mode & 2 ? 02000 : 0));
  switch (type) {
    case 'd': archive_entry_set_filetype(e, AE_IFDIR); break;
    case 'l': archive_entry_set_filetype(e, AE_IFLNK); archive_entry_set_symlink(e, extra.c_str()); break;
    case 'h': archive_entry_set_filetype(e, AE_IFREG); archive_entry_set_hardlink(e, extra.c_str());
              archive_entry_set_size(e, mode & 4 ? static_cast<la_int64_t>(extra.size()) : 0); break;
    case 'c': archive_entry_set_filetype(e, AE_IFCHR); archive_entry_set_rdev(e, 0x0103); break;
    case 'p': archive_entry_set_filetype(e, AE_IFIFO); break;
    default: archive_entry_set_filetype(e, AE_IFREG); archive_entry_set_size(e, static_cast<la_int64_t>(extra.size()));
  }
  archive_write_header(w, e);
  if (type != 'd' && type != 'l' && type != 'c' && type != 'p') archive_write_data(w, extra.data(), extra.size());
  archive_entry_free(e);
}

void write_structured(std::string_view spec, const std::string& out) {
  struct archive* w = archive_write_new();
  archive_write_set_format_pax_restricted(w);
  archive_write_open_filename(w, out.c_str());
  while (!spec.empty()) {
    size_t nl = spec.find('\n');
    add_entry(w, spec.substr(0, nl));
    spec.remove_prefix(nl == std::string_view::npos ? spec.size() : nl + 1);
  }
  archive_write_close(w);
  archive_write_free(w);
}

void check_inside(const fs::path& dest) {
  std::error_code ec;
  const fs::path root = fs::canonical(dest);
  for (auto it = fs::recursive_directory_iterator(dest, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    struct stat st;
    FUZZ_CHECK(::lstat(it->path().c_str(), &st) == 0, "an unpacked entry cannot be stat'ed");
    FUZZ_CHECK(!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode) && !S_ISFIFO(st.st_mode), "a device or fifo unpacked");
    FUZZ_CHECK((st.st_mode & (S_ISUID | S_ISGID)) == 0, "a setuid/setgid bit survived");
    if (!S_ISLNK(st.st_mode)) continue;
    fs::path resolved = fs::weakly_canonical(it->path(), ec);
    if (ec) continue;  // a loop or a dangling chain: nothing is reached through it
    auto rel = resolved.lexically_relative(root);
    FUZZ_CHECK(!rel.empty() && *rel.begin() != "..", "a symlink resolves outside the destination");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/air-unpack-fuzz-XXXXXX";
  FUZZ_CHECK(::mkdtemp(tmpl) != nullptr, "cannot make a temporary folder");
  g_box = fs::path(tmpl) / "box";
  fs::create_directories(g_box);
  std::ofstream(fs::path(tmpl) / "sentinel") << "outside";
  std::atexit([] { fs::remove_all(g_box.parent_path()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string archive = (g_box / "a.tar").string(), dest = (g_box / "dest").string();
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    std::ofstream(archive, std::ios::binary) << body;
  } else {
    write_structured(body, archive);
  }
  air::UnpackLimits limits;
  limits.max_total_bytes = 1 << 20;
  limits.max_entries = 2000;
  bool ok = true;
  try {
    air::unpack_snapshot(archive, dest, limits);
  } catch (const air::Error&) {
    ok = false;
  }
  // Outside the destination: the archive, the sentinel, nothing else.
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(g_box.parent_path())) {
    ++n;
    FUZZ_CHECK(e.path() == g_box || e.path().filename() == "sentinel", "something was written next to the box");
  }
  FUZZ_CHECK(n == 2, "the sentinel or the box vanished");
  std::ifstream s(g_box.parent_path() / "sentinel");
  std::string word;
  s >> word;
  FUZZ_CHECK(word == "outside", "the sentinel outside the destination changed");
  for (const auto& e : fs::directory_iterator(g_box))
    FUZZ_CHECK(e.path() == archive || (ok && e.path() == dest), "a refused unpack left files behind");
  if (ok) check_inside(dest);
  fs::remove_all(dest);
  fs::remove(archive);
  return 0;
}
