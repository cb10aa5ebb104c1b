// The snapshot routes (snapshots.h): a blob streamed from disk on GET, streamed to disk while hashed on PUT.
#include "server/api/snapshots.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "core/base/error.h"
#include "core/wire/api.h"
#include "server/api/route.h"
#include "server/workspace/auth.h"
#include "server/workspace/errors.h"
#include "server/workspace/snapshots.h"

namespace air::server {

using nlohmann::json;

namespace {

std::string snapshot_missing(const std::string& digest) {
  return "snapshot " + digest + " not found (or not yours to read): upload it with the run that uses it (air run)";
}

// An open blob file, closed when the response is done with it.
struct OpenFile {
  explicit OpenFile(int f) : fd(f) {}
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile() { ::close(fd); }
  int fd;
};

}  // namespace

void install_snapshot_routes(http::Server& srv, const Auth& auth, Snapshots& snapshots, uint64_t max_bytes,
                             std::string adopt_from, std::function<int64_t()> now_ms) {
  const std::string pattern = std::string(api::kPrefix) + R"(/snapshots/([0-9a-f]{64}))";
  // Read by admins, its uploaders, the node tokens of runs made from it and users who may view such a run
  // (Snapshots::refusal); anyone else is answered exactly as for a digest nobody uploaded.
  http::Gate reader = [&auth, &snapshots](const http::Request& req, http::Response&) {
    std::string digest = req.matches[1];
    if (snapshots.refusal(route::authenticate(auth, req), digest)) throw HttpError(404, "NOT_FOUND", snapshot_missing(digest));
    return true;
  };
  srv.Get(pattern, [&snapshots](const http::Request& req, http::Response& res) {
    std::string digest = req.matches[1];
    if (!snapshots.blobs().has(digest)) return route::send_error(res, 404, "NOT_FOUND", snapshot_missing(digest));
    uint64_t size = snapshots.blobs().size(digest);
    int fd = ::open(snapshots.blobs().path(digest).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw HttpError(500, "INTERNAL", "cannot open snapshot " + digest);
    auto file = std::make_shared<OpenFile>(fd);
    res.set_content_provider(size, "application/octet-stream", [file](uint64_t offset, uint64_t n, http::DataSink& sink) {
      std::vector<char> buf(static_cast<size_t>(n));
      ssize_t got = ::pread(file->fd, buf.data(), buf.size(), static_cast<off_t>(offset));
      if (got <= 0) return false;
      sink.write(buf.data(), static_cast<size_t>(got));
      return true;
    });
  }, {0, reader});
  auto uploader = route::user_gate(auth);  // any user submits code
  // Streamed to disk while hashed (BlobWriter); a body past the limit is refused from its headers (413).
  // A caller who may already read the digest uploads nothing (an unchanged tree costs one request); anyone
  // else sends the bytes, which must hash to the digest, whether or not it exists: the answer (201) is the
  // same either way, and having sent them, the caller is one of its uploaders.
  srv.Put(pattern, [&auth, &snapshots, max_bytes, now_ms](const http::Request& req, http::Response& res,
                                                       const http::ContentReader& read) {
    std::string digest = req.matches[1];
    Principal who = route::authenticate(auth, req);
    if (snapshots.blobs().has(digest) && !snapshots.refusal(who, digest)) {
      read([](const char*, size_t) { return true; });
      return route::send_json(res, json{{"digest", digest}, {"bytes", snapshots.blobs().size(digest)}, {"existed", true}});
    }
    auto w = snapshots.blobs().begin(digest, max_bytes);
    bool fits = true;
    bool complete = read([&](const char* d, size_t n) { return fits = w->write(d, n); });
    if (!fits && (w->write_errno() == ENOSPC || w->write_errno() == EDQUOT))
      throw HttpError(507, "DISK_FULL",
                      fmt::format("the workspace's disk is full: the snapshot cannot be stored ({}); free space "
                                  "under the workspace's home and submit again", std::strerror(w->write_errno())));
    if (!fits && w->write_errno())
      throw HttpError(500, "WRITE_FAILED", fmt::format("the snapshot cannot be stored: {}", std::strerror(w->write_errno())));
    if (!fits)
      throw HttpError(413, "TOO_LARGE", fmt::format("snapshot is larger than this workspace accepts ({} bytes)",
                                                   max_bytes));
    if (!complete) throw HttpError(400, "INCOMPLETE_UPLOAD", "the snapshot upload ended before its last byte");
    try {
      w->commit();
    } catch (const Error& e) {
      throw HttpError(400, "DIGEST_MISMATCH", e.what());
    }
    snapshots.uploads().record(digest, who.user, now_ms());
    route::send_json(res, json{{"digest", digest}, {"bytes", w->bytes()}, {"existed", false}}, 201);
  }, {max_bytes, uploader});
  // The local workspace's shortcut for `air run` on the same home: the CLI has just written the archive to
  // adopt_from/<digest>.tar.zst, and an upload would copy it twice more (over loopback, into the store). The
  // store links that very file instead, once it has hashed it (BlobStore::adopt: only a file of the
  // workspace's own user that nobody else may write). The caller becomes an uploader, as with a PUT; any
  // refusal is 409 NOT_ADOPTED with the reason, and the CLI then uploads. Only an admin may: finding a file in
  // the folder proves nothing about what the caller holds, and an admin reads every snapshot anyway, so
  // adoption gives nobody a snapshot they could not read before.
  srv.Post(pattern + "/adopt", [&auth, &snapshots, max_bytes, adopt_from, now_ms](const http::Request& req,
                                                                                 http::Response& res) {
    std::string digest = req.matches[1];
    Principal who = route::authenticate(auth, req);
    auto refuse = [&](const std::string& why) {
      route::send_error(res, 409, "NOT_ADOPTED", "snapshot " + digest + " was not adopted: " + why + "; upload it");
    };
    if (adopt_from.empty()) return refuse("this workspace takes uploads only");
    if (!who.admin || who.is_node()) return refuse("only a workspace admin's own archive is adopted");
    bool existed = snapshots.blobs().has(digest);
    std::string why = snapshots.blobs().adopt(digest, adopt_from + "/" + digest + ".tar.zst", max_bytes);
    if (!why.empty()) return refuse("its archive in the CLI's cache: " + why);
    snapshots.uploads().record(digest, who.user, now_ms());
    route::send_json(res, json{{"digest", digest}, {"bytes", snapshots.blobs().size(digest)}, {"existed", existed},
                               {"adopted", !existed}}, existed ? 200 : 201);
  }, {0, uploader});
}

}  // namespace air::server
