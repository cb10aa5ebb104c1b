// The rules of volume paths, `/Volumes/<catalog>/<schema>/<volume>/...` (docs/volumes.md): parsing (Unity
// Catalog's name rules, no '.'/'..'), and finding the paths a workload mentions. Shared by the workspace's
// store and Files API, the CLI's `air fs` and the node agent.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace air {

// A refused volume operation, with the HTTP status and Databricks error_code it maps to.
struct FsError : std::runtime_error {
  FsError(int status, std::string code, const std::string& message)
      : std::runtime_error(message), status(status), code(std::move(code)) {}
  int status;
  std::string code;  // NOT_FOUND, ALREADY_EXISTS, INVALID_PARAMETER_VALUE, PERMISSION_DENIED, ...
};

// A parsed path: parts[0..2] are catalog, schema, volume (lower-cased, as Unity Catalog folds names);
// the rest are the folders and file inside the volume. Fewer than 3 parts names /Volumes, a catalog or
// a schema (listable, never writable).
struct VolumePath {
  std::vector<std::string> parts;
  bool in_volume() const { return parts.size() >= 3; }
  bool is_volume_root() const { return parts.size() == 3; }
  std::string str() const;         // "/Volumes/main/default/ckpt/a.txt"
  std::string volume_key() const;  // "main/default/ckpt" ("" when not in a volume)
  std::string relative() const;    // "main/default/ckpt/a.txt" (under the storage root)
  VolumePath child(const std::string& name) const;
};

// The Files API route of a path: "/api/2.0/fs/files/Volumes/main/default/ckpt/a.txt" (each part
// percent-encoded); kind "directories" for the directory routes.
std::string files_api_url(const VolumePath& p, const char* kind = "files");

// Where `code_source.snapshot.remote_volume` keeps a snapshot: <remote_volume>/.internal/<sha256>.tar.zst,
// named by content, so an unchanged tree is found there and not sent again. Throws FsError when
// remote_volume is not a path inside a volume (/Volumes/<catalog>/<schema>/<volume>[/...]).
VolumePath volume_snapshot_path(const std::string& remote_volume, const std::string& sha256);

// Accepts "/Volumes/...", "dbfs:/Volumes/..." and a trailing '/'. Refuses (FsError 400) anything else:
// other roots, empty, "." or ".." segments, control characters, names Unity Catalog does not allow.
VolumePath parse_volume_path(std::string_view path);

// Every "/Volumes/c/s/v[/...]" mentioned in a text (a command, env values, parameters), as written
// (trailing punctuation trimmed), without duplicates, in order of first appearance; invalid ones skipped.
std::vector<std::string> volume_paths_in(std::string_view text);

}  // namespace air
