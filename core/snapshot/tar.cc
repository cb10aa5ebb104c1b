// ustar headers with pax extended records where ustar falls short (see tar.h).
#include "core/snapshot/tar.h"

#include <algorithm>
#include <cstring>

namespace air {
namespace {

// ustar field offsets and widths (POSIX.1-1988).
constexpr size_t kName = 0, kNameLen = 100;
constexpr size_t kMode = 100, kUid = 108, kGid = 116, kSize = 124, kMtime = 136, kChksum = 148;
constexpr size_t kType = 156, kLink = 157, kLinkLen = 100;
constexpr size_t kMagic = 257, kVersion = 263, kPrefix = 345, kPrefixLen = 155;
constexpr uint64_t kMaxOctalSize = 077777777777ull;  // 11 octal digits: 8 GiB - 1

// Writes v as zero-padded octal in width-1 digits and a NUL.
void put_octal(char* field, size_t width, uint64_t v) {
  field[width - 1] = '\0';
  for (size_t i = width - 1; i-- > 0; v >>= 3) field[i] = static_cast<char>('0' + (v & 7));
}

bool ascii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Splits path into ustar's prefix (before the last usable '/') and name; false when it does not fit.
bool split_ustar(const std::string& path, std::string* prefix, std::string* name) {
  if (path.size() <= kNameLen) {
    prefix->clear();
    *name = path;
    return true;
  }
  // The name part takes at most 100 bytes: the cut is a '/' no earlier than size - 101.
  size_t from = path.size() - kNameLen - 1;
  size_t slash = path.find('/', from);
  if (slash == std::string::npos || slash == 0 || slash > kPrefixLen || slash + 1 == path.size()) return false;
  *prefix = path.substr(0, slash);
  *name = path.substr(slash + 1);
  return true;
}

// One pax record, "<len> key=value\n", where len counts the whole record, its own digits included.
void append_pax_record(std::string& out, const std::string& key, const std::string& value) {
  size_t body = key.size() + value.size() + 3;  // ' ', '=', '\n'
  size_t len = body + 1;
  while (std::to_string(len).size() + body != len) len = std::to_string(len).size() + body;
  out += std::to_string(len) + " " + key + "=" + value + "\n";
}

void append_block(std::string& out, const std::string& name, const std::string& prefix, char type, uint64_t size,
                  unsigned mode, const std::string& link) {
  char h[kTarBlock];
  std::memset(h, 0, sizeof h);
  std::memcpy(h + kName, name.data(), std::min(name.size(), kNameLen));
  put_octal(h + kMode, 8, mode);
  put_octal(h + kUid, 8, 0);
  put_octal(h + kGid, 8, 0);
  put_octal(h + kSize, 12, size);
  put_octal(h + kMtime, 12, 0);
  h[kType] = type;
  std::memcpy(h + kLink, link.data(), std::min(link.size(), kLinkLen));
  std::memcpy(h + kMagic, "ustar", 6);
  std::memcpy(h + kVersion, "00", 2);
  std::memcpy(h + kPrefix, prefix.data(), std::min(prefix.size(), kPrefixLen));
  // The checksum is the byte sum of the header with its own field read as spaces.
  std::memset(h + kChksum, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  put_octal(h + kChksum, 7, sum);  // six digits, NUL, and the space left from above
  out.append(h, sizeof h);
}

}  // namespace

void append_tar_header(std::string& out, const SnapshotFile& f) {
  std::string prefix, name;
  std::string pax;
  bool path_fits = split_ustar(f.path, &prefix, &name);
  bool link_fits = !f.symlink || f.link_target.size() <= kLinkLen;
  // Names are the file system's bytes, not necessarily UTF-8 (pax's default): say so, or libarchive
  // warns that it cannot convert them. ustar fields carry bytes as they are.
  if ((!path_fits && !ascii(f.path)) || (!link_fits && !ascii(f.link_target)))
    append_pax_record(pax, "hdrcharset", "BINARY");
  if (!path_fits) {
    append_pax_record(pax, "path", f.path);
    prefix.clear();
    name = f.path.substr(0, kNameLen);  // for readers without pax: a truncated name
  }
  if (!link_fits) append_pax_record(pax, "linkpath", f.link_target);
  uint64_t size = f.symlink ? 0 : f.size;
  if (size > kMaxOctalSize) append_pax_record(pax, "size", std::to_string(size));
  if (!pax.empty()) {
    append_block(out, "PaxHeader", "", 'x', pax.size(), 0644, "");
    out += pax;
    out.append(tar_padding(pax.size()), '\0');
  }
  append_block(out, name, prefix, f.symlink ? '2' : '0', size > kMaxOctalSize ? 0 : size,
               f.symlink ? 0777 : (f.executable ? 0755 : 0644), f.symlink ? f.link_target : "");
}

}  // namespace air
