// The hub's error answers as one line and a hint each. The hub names the case in X-Error-Code
// (RepoNotFound, EntryNotFound, RevisionNotFound, GatedRepo) and explains it in X-Error-Message.
#include <chrono>
#include <mutex>
#include <thread>

#include "hub/internal.h"

namespace air::hub {

std::string repo_url(const Repo& repo, const Options& options) {
  return options.endpoint + (repo.type == RepoType::kDataset ? "/datasets/" : "/") + repo.id;
}

void log_text(const Options& options, const std::string& text) {
  static std::mutex m;
  if (!options.log) return;
  std::lock_guard<std::mutex> l(m);
  *options.log << text << std::flush;
}

HttpResponse call_with_retries(const HttpRequest& request, const Options& options, const std::string& what) {
  int delay = std::max(1, options.backoff_ms);
  for (int attempt = 0;; ++attempt) {
    HttpResponse r = http_call(request);
    bool transient = r.status == 0 || r.status == 429 || r.status >= 500;
    if (!transient || attempt >= options.retries) {
      if (r.status == 0)
        throw HubError("network error: " + what + " failed after " + std::to_string(attempt + 1) + " attempts: " + r.error,
                       "check the network and HF_ENDPOINT (" + options.endpoint + "); with the files cached, HF_HUB_OFFLINE=1 uses the cache alone");
      return r;
    }
    log_text(options, "hub: " + what + ": " + (r.status ? "HTTP " + std::to_string(r.status) : r.error) + "; retrying in " +
                          std::to_string(delay) + " ms\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    delay = std::min(delay * 2, 8000);
  }
}

void raise_for_status(const HttpResponse& r, const Repo& repo, const std::string& file, const Options& options) {
  const std::string code = r.header("x-error-code");
  const std::string page = repo_url(repo, options);
  const std::string what = file.empty() ? repo.kind() + " " + repo.id : "file " + file + " of " + repo.kind() + " " + repo.id;
  if (code == "GatedRepo") {
    if (options.token.empty())
      throw HubError(repo.kind() + " " + repo.id + " is gated and no token was given (HTTP " + std::to_string(r.status) + ")",
                     "accept its licence at " + page + ", then give air-train a token: put HF_TOKEN in the YAML's secrets (e.g. HF_TOKEN: my_scope/hf_token)");
    throw HubError(repo.kind() + " " + repo.id + " is gated and this token has no access to it (HTTP " + std::to_string(r.status) + ")",
                   "accept the licence at " + page + " with the account the token belongs to");
  }
  if (r.status == 401) {
    if (options.token.empty())
      throw HubError("the hub refused " + what + " without a token (HTTP 401): it is private, gated or does not exist",
                     "put HF_TOKEN in the YAML's secrets (e.g. HF_TOKEN: my_scope/hf_token, stored with `air secrets put-secret`), or set HF_TOKEN");
    throw HubError("the hub refused the token for " + what + " (HTTP 401): the repo does not exist or the token is invalid",
                   "check the name at " + page + " and that HF_TOKEN is a valid read token");
  }
  if (r.status == 403)
    throw HubError("the hub refused " + what + " (HTTP 403)", "check that the token has read access to " + page);
  if (code == "RevisionNotFound")
    throw HubError("revision '" + repo.revision + "' of " + repo.kind() + " " + repo.id + " not found (HTTP 404)", "check the branch, tag or commit at " + page);
  if (code == "EntryNotFound" || (r.status == 404 && !file.empty() && code != "RepoNotFound"))
    throw HubError("file " + file + " not found in " + repo.kind() + " " + repo.id + " (HTTP 404)", "see the repo's files at " + page + "/tree/" + repo.revision);
  if (r.status == 404)
    throw HubError(repo.kind() + " " + repo.id + " not found on " + options.endpoint + " (HTTP 404)",
                   repo.type == RepoType::kModel ? "check the name (org/name) at " + page
                                                 : "check the name (org/name) at " + page + "; datasets live under /datasets/");
  std::string msg = r.header("x-error-message");
  throw HubError("the hub answered HTTP " + std::to_string(r.status) + " for " + what + (msg.empty() ? "" : ": " + msg),
                 "try again later, or check HF_ENDPOINT (" + options.endpoint + ")");
}

}  // namespace air::hub
