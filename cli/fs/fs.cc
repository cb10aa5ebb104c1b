// `air fs ls|cp|rm|mkdir`: the workspace's volumes through its Files API, in the style of `databricks fs`.
// A path is remote when it starts with /Volumes/ or dbfs:/Volumes/; anything else is on this machine.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <ostream>

#include "cli/format.h"
#include "cli/remote.h"
#include "cli/verbs.h"
#include "cli/output.h"
#include "core/base/error.h"
#include "core/base/codec.h"
#include "core/volumes/path.h"

namespace air::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using air::VolumePath;

bool is_remote(const std::string& p) {
  return p == "/Volumes" || p == "dbfs:/Volumes" || p.rfind("/Volumes/", 0) == 0 || p.rfind("dbfs:/Volumes/", 0) == 0;
}

VolumePath remote(const std::string& p) {
  try {
    return parse_volume_path(p);
  } catch (const FsError& e) {
    throw usage_error(e.what(), "volume paths look like dbfs:/Volumes/<catalog>/<schema>/<volume>/<path>");
  }
}

std::string url(const char* kind, const VolumePath& p) { return files_api_url(p, kind); }

struct Fs {
  Client& c;
  Context& ctx;
  bool progress = false;

  // Metadata of a remote path: nullopt when nothing is there. `refused_unknown`: a refusal (no READ_VOLUME)
  // is nullopt too, for an upload, whose own answer then names what is missing (WRITE_VOLUME).
  std::optional<bool> is_dir(const VolumePath& p, bool refused_unknown = false) {
    if (p.parts.size() < 3) return true;
    auto r = c.request("HEAD", url("directories", p));
    if (r.status == 200) return true;
    r = c.request("HEAD", url("files", p));
    if (r.status == 200) return false;
    if (r.status == 404 || (r.status == 403 && refused_unknown)) return std::nullopt;
    c.throw_api_error(c.request("GET", url("files", p)));  // HEAD has no body: ask again for the message
  }

  std::vector<json> list(const VolumePath& p) {
    std::vector<json> out;
    std::string token;
    do {
      auto j = c.get_json(url("directories", p) + (token.empty() ? "" : "?page_token=" + percent_encode(token)));
      for (const auto& e : j.value("contents", json::array())) out.push_back(e);
      token = j.value("next_page_token", "");
    } while (!token.empty());
    return out;
  }

  ProgressFn bar(const std::string& name) {
    if (!progress) return {};
    return [this, name, last = uint64_t(0)](uint64_t done, uint64_t total) mutable {
      if (total == 0 || (done != total && done - last < (4u << 20))) return;
      last = done;
      *ctx.err << fmt::format("\r  {}  {:3d}% ({:.1f} of {:.1f} MB)", name, static_cast<int>(done * 100 / total),
                              done / 1e6, total / 1e6)
               << std::flush;
    };
  }

  void upload_file(const fs::path& src, const VolumePath& dst, bool overwrite) {
    std::string q = overwrite ? "?overwrite=true" : "?overwrite=false";
    try {
      c.put_file(url("files", dst) + q, src.string(), bar(dst.str()));
    } catch (const ApiError& e) {
      if (e.code() == "ALREADY_EXISTS") throw Error(dst.str() + " already exists", "add --overwrite to replace it");
      throw;
    }
    if (progress) *ctx.err << "\n";
  }

  void download_file(const VolumePath& src, const fs::path& dst, bool overwrite) {
    if (fs::exists(dst) && !overwrite) throw Error(dst.string() + " already exists", "add --overwrite to replace it");
    if (dst.has_parent_path()) fs::create_directories(dst.parent_path());
    c.get_to_file(url("files", src), dst.string(), bar(src.str()));
    if (progress) *ctx.err << "\n";
  }

  void upload_tree(const fs::path& src, const VolumePath& dst, bool overwrite, int& files) {
    auto r = c.request("PUT", url("directories", dst));
    if (r.status / 100 != 2) c.throw_api_error(r);
    std::vector<fs::directory_entry> entries{fs::directory_iterator(src), fs::directory_iterator()};
    std::sort(entries.begin(), entries.end());
    for (const auto& e : entries) {
      VolumePath child = dst.child(e.path().filename().string());
      if (e.is_directory()) upload_tree(e.path(), child, overwrite, files);
      else if (e.is_regular_file()) upload_file(e.path(), child, overwrite), files++;
    }
  }

  void download_tree(const VolumePath& src, const fs::path& dst, bool overwrite, int& files) {
    fs::create_directories(dst);
    for (const auto& e : list(src)) {
      VolumePath child = src.child(e.value("name", ""));
      if (e.value("is_directory", false)) download_tree(child, dst / e.value("name", ""), overwrite, files);
      else download_file(child, dst / e.value("name", ""), overwrite), files++;
    }
  }

  // Deleting needs WRITE_VOLUME only, as the API's DELETE does: a path inside a volume is first deleted as a
  // file (no HEAD, which would need READ_VOLUME); the API's 400 "is a directory" sends it on to the folder.
  // -r lists the folder's contents, which needs READ_VOLUME too.
  void remove(const VolumePath& p, bool recursive) {
    if (p.parts.size() > 3) {
      auto r = c.request("DELETE", url("files", p));
      if (r.status / 100 == 2) return;
      if (r.status == 404) throw Error(p.str() + " does not exist");
      if (r.status != 400) c.throw_api_error(r);
    }
    if (recursive)
      for (const auto& e : list(p)) remove(p.child(e.value("name", "")), true);
    auto r = c.request("DELETE", url("directories", p));
    if (r.status == 404) throw Error(p.str() + " does not exist");
    if (r.status / 100 != 2) c.throw_api_error(r);
  }
};

void run_ls(Fs& f, const std::string& path, bool long_form) {
  VolumePath p = remote(path);
  auto d = f.is_dir(p);
  if (!d) throw Error(p.str() + " does not exist", "list its parent: air fs ls " + p.str().substr(0, p.str().rfind('/')));
  std::vector<json> entries;
  if (*d) entries = f.list(p);
  else entries.push_back(json{{"path", p.str()}, {"name", p.parts.back()}, {"is_directory", false}});
  if (f.ctx.global.output == "json") {
    print_json(f.ctx, json{{"files", entries}});  // like `databricks fs ls -o json`: data.files[]
    return;
  }
  for (const auto& e : entries) {
    std::string name = e.value("name", "") + (e.value("is_directory", false) ? "/" : "");
    if (long_form)
      *f.ctx.out << fmt::format("{:>14}  {}  {}\n", e.value("is_directory", false) ? "-" : std::to_string(e.value("file_size", uint64_t(0))),
                                format_time(e.value("last_modified", int64_t(0))), name);
    else
      *f.ctx.out << name << "\n";
  }
}

void run_cp(Fs& f, const std::string& src, const std::string& dst, bool recursive, bool overwrite) {
  bool rs = is_remote(src), rd = is_remote(dst);
  if (rs == rd)
    throw usage_error(rs ? "both paths are volumes" : "neither path is a volume",
                      "copy between this machine and a volume: air fs cp [-r] LOCAL dbfs:/Volumes/... (or back)");
  int files = 0;
  if (!rs) {
    fs::path s(src);
    if (!fs::exists(s)) throw usage_error(src + " does not exist");
    VolumePath d = remote(dst);
    if (fs::is_directory(s)) {
      if (!recursive) throw usage_error(src + " is a directory", "add -r to copy a directory");
      f.upload_tree(s, d, overwrite, files);
    } else {
      bool into = dst.back() == '/' || f.is_dir(d, true).value_or(false);
      f.upload_file(s, into ? d.child(s.filename().string()) : d, overwrite);
      files = 1;
    }
  } else {
    VolumePath s = remote(src);
    auto d = f.is_dir(s);
    if (!d) throw Error(s.str() + " does not exist");
    fs::path local(dst);
    if (*d) {
      if (!recursive) throw usage_error(s.str() + " is a directory", "add -r to copy a directory");
      f.download_tree(s, local, overwrite, files);
    } else {
      if (fs::is_directory(local) || dst.back() == '/') local /= s.parts.back();
      f.download_file(s, local, overwrite);
      files = 1;
    }
  }
  if (f.ctx.global.output == "json") print_json(f.ctx, json{{"files", files}});
  else *f.ctx.err << fmt::format("copied {} file(s)\n", files);
}

}  // namespace

void setup_fs(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("fs", "Files in the workspace's volumes (/Volumes/<catalog>/<schema>/<volume>/...)");
  cmd->require_subcommand(1);
  struct Flags {
    std::vector<std::string> paths;
    bool recursive = false, overwrite = false, long_form = false;
  };
  auto f = std::make_shared<Flags>();
  auto with_fs = [&ctx](auto fn) {
    Session s = connect(ctx);
    Fs fs{*s.client, ctx, ctx.global.output == "text" && stderr_is_tty()};
    fn(fs);
  };
  auto* ls = cmd->add_subcommand("ls", "List a volume folder (or show one file)");
  ls->add_option("path", f->paths, "dbfs:/Volumes/... or /Volumes/...")->required()->expected(1);
  ls->add_flag("-l,--long", f->long_form, "Sizes and modification times");
  ls->callback([f, with_fs] { with_fs([&](Fs& x) { run_ls(x, f->paths[0], f->long_form); }); });
  auto* cp = cmd->add_subcommand("cp", "Copy between this machine and a volume");
  cp->add_option("paths", f->paths, "SOURCE TARGET")->required()->expected(2);
  cp->add_flag("-r,--recursive", f->recursive, "Copy a directory's contents");
  cp->add_flag("--overwrite", f->overwrite, "Replace files that exist");
  cp->callback([f, with_fs] { with_fs([&](Fs& x) { run_cp(x, f->paths[0], f->paths[1], f->recursive, f->overwrite); }); });
  auto* rm = cmd->add_subcommand("rm", "Delete a file, an empty folder, or (-r) a folder and its contents");
  rm->add_option("path", f->paths, "dbfs:/Volumes/... or /Volumes/...")->required()->expected(1);
  rm->add_flag("-r,--recursive", f->recursive, "Delete a folder's contents too");
  rm->callback([f, with_fs, &ctx] {
    with_fs([&](Fs& x) { x.remove(remote(f->paths[0]), f->recursive); });
    if (ctx.global.output == "json") print_json(ctx, json{{"deleted", f->paths[0]}});
  });
  auto* mk = cmd->add_subcommand("mkdir", "Create a folder (and its parents); creating /Volumes/c/s/v makes a volume");
  mk->add_option("path", f->paths, "dbfs:/Volumes/... or /Volumes/...")->required()->expected(1);
  mk->callback([f, with_fs] {
    with_fs([&](Fs& x) {
      auto r = x.c.request("PUT", url("directories", remote(f->paths[0])));
      if (r.status / 100 != 2) x.c.throw_api_error(r);
    });
  });
}

}  // namespace air::cli
