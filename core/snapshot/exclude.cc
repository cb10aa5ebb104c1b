// Keeps air's own state folder out of a snapshot: a project whose root contains $AIR_HOME (say AIR_HOME=./.air)
// would otherwise ship the workspace database, blobs and caches, and grow with every run.
#include <filesystem>

#include "core/snapshot/snapshot.h"

namespace air {

uint64_t exclude_subtree(SnapshotManifest& m, const std::string& dir, const std::string& rule) {
  std::error_code ec;
  std::filesystem::path real = std::filesystem::weakly_canonical(dir, ec);
  if (ec || m.root.empty()) return 0;
  std::filesystem::path rel = real.lexically_relative(m.root);
  const std::string r = rel.generic_string();
  if (r.empty() || r == "." || r.rfind("..", 0) == 0) return 0;  // not strictly inside the root
  auto under = [&](const std::string& p) { return p == r || (p.size() > r.size() && p.compare(0, r.size(), r) == 0 && p[r.size()] == '/'); };
  uint64_t n = 0;
  std::vector<SnapshotFile> kept;
  for (auto& f : m.files) {
    if (under(f.path)) {
      ++n;
      m.total_bytes -= f.size;
    } else {
      kept.push_back(std::move(f));
    }
  }
  if (n == 0) return 0;
  m.files = std::move(kept);
  std::erase_if(m.largest, [&](const SnapshotFile& f) { return under(f.path); });
  std::erase_if(m.credential_like, [&](const std::string& p) { return under(p); });
  m.excluded.insert(m.excluded.begin(), IgnoreRuleCount{"built-in", rule + " (" + r + "/)", n});
  m.files_excluded += n;
  return n;
}

}  // namespace air
