// The Files API routes: thin handlers that authorise, map the request onto VolumeStore and render
// Databricks' replies. Uploads stream to a temporary file (never whole in memory) and are renamed into
// place when the last byte arrived; downloads stream from disk, honouring a single Range.
#include "server/api/files.h"
#include "core/base/time.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include <nlohmann/json.hpp>

#include "server/http/server.h"
#include "server/store/volumes.h"
#include "server/workspace/auth.h"
#include "server/workspace/errors.h"
#include "server/workspace/volume_access.h"

namespace air::server {

namespace {

using nlohmann::json;

const std::string kFiles = "/api/2.0/fs/files";
const std::string kDirs = "/api/2.0/fs/directories";

void send_fs_error(http::Response& res, const FsError& e) {
  res.status = e.status;
  res.set_content(json{{"error_code", e.code}, {"message", e.what()}}.dump(), "application/json");
}

std::string http_date(int64_t ms) { return format_utc(ms, TimeFormat::kHttp); }

bool bool_param(const http::Request& req, const char* name, bool dflt) {
  if (!req.has_param(name)) return dflt;
  std::string v = req.get_param_value(name);
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  throw FsError(400, "INVALID_PARAMETER_VALUE", fmt::format("query parameter {}='{}' is not true or false", name, v));
}

// "bytes=A-B", "bytes=A-" or "bytes=-N" against a file of `size` bytes: [offset, length].
std::pair<uint64_t, uint64_t> parse_range(const std::string& h, uint64_t size) {
  auto bad = [&] { return FsError(416, "INVALID_PARAMETER_VALUE", fmt::format("cannot satisfy Range '{}' of a {}-byte file", h, size)); };
  if (h.rfind("bytes=", 0) != 0 || h.find(',') != std::string::npos) throw bad();
  std::string spec = h.substr(6);
  auto dash = spec.find('-');
  if (dash == std::string::npos) throw bad();
  auto num = [&](const std::string& s) -> uint64_t {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 19) throw bad();
    return std::stoull(s);
  };
  std::string a = spec.substr(0, dash), b = spec.substr(dash + 1);
  if (a.empty()) {  // the last N bytes
    uint64_t n = std::min(num(b), size);
    if (n == 0) throw bad();
    return {size - n, n};
  }
  uint64_t first = num(a);
  uint64_t last = b.empty() ? size - 1 : std::min(num(b), size - 1);
  if (first >= size || last < first) throw bad();
  return {first, last - first + 1};
}

class FilesApi : public std::enable_shared_from_this<FilesApi> {
 public:
  FilesApi(http::Server& srv, Auth& auth, VolumeAccess& volumes, NodeSpecOf node_spec)
      : srv_(srv), auth_(auth), va_(volumes), node_spec_(std::move(node_spec)) {}

  void install() {
    auto self = shared_from_this();  // the routes keep the handler alive
    srv_.Get(kFiles + "(/.*)", guarded([self](const auto& req, auto& res) { self->get_file(req, res); }));
    // Uploads stream to disk: no body limit beyond the volume's disk (1 TiB caps a declared length).
    srv_.Put(
        kFiles + "(/.*)",
        http::ReaderHandler([self](const http::Request& req, http::Response& res, const http::ContentReader& read) {
          guarded([&](const auto& rq, auto& rs) { self->put_file(rq, rs, read); })(req, res);
        }),
        http::RouteOptions{uint64_t{1} << 40, {}});
    srv_.Delete(kFiles + "(/.*)", guarded([self](const auto& req, auto& res) {
      self->va_.volumes().remove_file(self->allowed(req, true));
      res.status = 204;
    }));
    srv_.Get(kDirs + "(/.*)", guarded([self](const auto& req, auto& res) { self->get_dir(req, res); }));
    srv_.Put(kDirs + "(/.*)", guarded([self](const auto& req, auto& res) {
      self->va_.volumes().make_directories(self->allowed(req, true));
      res.status = 204;
    }));
    srv_.Delete(kDirs + "(/.*)", guarded([self](const auto& req, auto& res) {
      self->va_.volumes().remove_directory(self->allowed(req, true));
      res.status = 204;
    }));
  }

 private:
  using Fn = std::function<void(const http::Request&, http::Response&)>;

  // Every FsError becomes Databricks' error body here, not the workspace's own shape.
  static Fn guarded(Fn f) {
    return [f](const http::Request& req, http::Response& res) {
      try {
        f(req, res);
      } catch (const FsError& e) {
        send_fs_error(res, e);
      } catch (const HttpError& e) {
        send_fs_error(res, FsError(e.status, e.code, e.what()));
      }
    };
  }

  // Authenticates and parses the path, and applies the volume's owner and grants (access.h): reading needs
  // READ_VOLUME, changing WRITE_VOLUME. A node token acts with its run's owner's rights, and only inside the
  // volumes its workload names (and the snapshot its run was made from).
  Principal caller(const http::Request& req) {
    std::string h = req.get_header_value("Authorization");
    auto who = auth_.authenticate(h.rfind("Bearer ", 0) == 0 ? h.substr(7) : std::string());
    if (!who) throw FsError(401, "UNAUTHENTICATED", "missing or unknown bearer token");
    return *who;
  }

  VolumePath allowed(const http::Request& req, bool write) { return allowed(req, write, caller(req)); }

  VolumePath allowed(const http::Request& req, bool write, const Principal& who) {
    VolumePath p = parse_volume_path(req.matches[1].str());
    std::string key = p.volume_key();
    const std::string need = write ? kWriteVolume : kReadVolume;
    if (!who.is_node()) {
      // A volume the caller may not see reads exactly as a path that does not exist (get_file, get_dir).
      if (!write && !key.empty() && va_.volume_hidden(who, key))
        throw FsError(404, "NOT_FOUND", fmt::format("{} does not exist", p.str()));
      if (!key.empty()) va_.require_volume(who, key, need);
      return p;  // /Volumes, a catalog or a schema: listed through the caller's volumes (get_dir)
    }
    auto spec = node_spec_(who.run_id, who.attempt);
    if (!write && !spec.snapshot_path.empty() && p.str() == spec.snapshot_path) return p;  // its code snapshot
    if (!key.empty()) va_.require_volume(who, key, kReadVolume);  // names the missing privilege first
    if (key.empty() || std::find(spec.volumes.begin(), spec.volumes.end(), key) == spec.volumes.end())
      throw FsError(403, "PERMISSION_DENIED",
                    fmt::format("this node token may {} only the volumes its workload names; {} is not one of them",
                                write ? "write" : "read", p.in_volume() ? "/Volumes/" + key : p.str()));
    if (write) va_.require_volume(who, key, need);
    return p;
  }

  void get_file(const http::Request& req, http::Response& res) {
    // We answer a Range ourselves (Databricks' error body for 416; the server core applies a Range only to
    // a 200 answer, so it leaves our 206 alone).
    const std::string range = req.get_header_value("Range");
    VolumePath p = allowed(req, false);
    auto meta = va_.volumes().stat(p);
    if (!meta || meta->is_directory)
      throw FsError(404, "NOT_FOUND", fmt::format("{} {}", p.str(), meta ? "is a directory" : "does not exist"));
    res.set_header("Last-Modified", http_date(meta->modified_ms));
    res.set_header("Accept-Ranges", "bytes");
    if (req.method == "HEAD") {
      res.set_header("Content-Type", "application/octet-stream");
      res.set_header("Content-Length", std::to_string(meta->size));
      res.status = 200;
      return;
    }
    std::shared_ptr<VolumeStore::Reader> file = va_.volumes().open_read(p);
    uint64_t offset = 0, length = file->size();
    if (!range.empty() && file->size() > 0) {
      try {
        std::tie(offset, length) = parse_range(range, file->size());
      } catch (const FsError&) {
        res.set_header("Content-Range", fmt::format("bytes */{}", file->size()));
        throw;
      }
      res.status = 206;
      res.set_header("Content-Range", fmt::format("bytes {}-{}/{}", offset, offset + length - 1, file->size()));
    }
    if (length == 0) return res.set_content("", "application/octet-stream");
    res.set_content_provider(length, "application/octet-stream",
                             [file, offset](uint64_t off, uint64_t len, http::DataSink& sink) {
                               std::vector<char> buf(static_cast<size_t>(std::min<uint64_t>(len, 1 << 20)));
                               size_t got = file->read_at(offset + off, buf.data(), buf.size());
                               if (got == 0) return false;
                               sink.write(buf.data(), got);
                               return true;
                             });
  }

  void put_file(const http::Request& req, http::Response& res, const http::ContentReader& read) {
    std::unique_ptr<VolumeStore::Writer> w;
    try {
      VolumePath p = allowed(req, true);
      bool overwrite = bool_param(req, "overwrite", true);  // Databricks: true when unspecified
      w = va_.volumes().begin_write(p, overwrite);
    } catch (const std::exception&) {
      // Refused before the body was read: drain it so that the connection stays usable for the next request.
      read([](const char*, size_t) { return true; });
      throw;
    }
    std::optional<FsError> failed;
    bool complete = read([&](const char* d, size_t n) {
      try {
        w->write(d, n);
        return true;
      } catch (const FsError& e) {
        failed = e;
        return false;
      }
    });
    if (failed) throw *failed;
    if (!complete) throw FsError(400, "INVALID_PARAMETER_VALUE", "the upload ended before its last byte");
    w->commit();
    res.status = 204;
  }

  void get_dir(const http::Request& req, http::Response& res) {
    Principal who = caller(req);
    VolumePath p = allowed(req, false, who);
    auto meta = va_.volumes().stat(p);
    if (!meta) throw FsError(404, "NOT_FOUND", fmt::format("{} does not exist", p.str()));
    if (!meta->is_directory) throw FsError(404, "NOT_FOUND", fmt::format("{} is a file, not a directory", p.str()));
    if (req.method == "HEAD") {
      res.status = 200;
      return;
    }
    size_t page_size = 1000;
    if (req.has_param("page_size")) {
      std::string v = req.get_param_value("page_size");
      if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
        throw FsError(400, "INVALID_PARAMETER_VALUE", fmt::format("page_size='{}' is not a number", v));
      page_size = std::stoul(v);
      if (page_size == 0) page_size = 1000;
    }
    auto page = va_.volumes().list(p, page_size, req.get_param_value("page_token"));
    if (!p.in_volume() && !who.admin) {
      // Above the volumes, a user sees the catalogs, schemas and volumes that lead to one it may read.
      std::vector<std::string> mine = va_.readable_volumes(who);
      std::string prefix = p.relative().empty() ? "" : p.relative() + "/";
      std::erase_if(page.entries, [&](const VolumeStore::Entry& e) {
        return std::none_of(mine.begin(), mine.end(), [&](const std::string& k) {
          return k.rfind(prefix + e.name, 0) == 0 && (k.size() == prefix.size() + e.name.size() || k[prefix.size() + e.name.size()] == '/');
        });
      });
    }
    json contents = json::array();
    for (const auto& e : page.entries) {
      json j{{"path", p.child(e.name).str() + (e.is_directory ? "/" : "")},
             {"name", e.name},
             {"is_directory", e.is_directory},
             {"last_modified", e.modified_ms}};
      if (!e.is_directory) j["file_size"] = e.size;
      contents.push_back(std::move(j));
    }
    json body{{"contents", contents}};
    if (!page.next_page_token.empty()) body["next_page_token"] = page.next_page_token;
    res.set_content(body.dump(), "application/json");
  }

  http::Server& srv_;
  Auth& auth_;
  VolumeAccess& va_;
  NodeSpecOf node_spec_;
};

}  // namespace

void install_files_routes(http::Server& srv, Auth& auth, VolumeAccess& volumes, NodeSpecOf node_spec) {
  std::make_shared<FilesApi>(srv, auth, volumes, std::move(node_spec))->install();
}

}  // namespace air::server
