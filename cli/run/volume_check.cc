// Who owns the volumes a workload names (cli/run/volume_check.h), over SCIM's Me and Unity Catalog's
// volume route: a volume the caller may not see answers 404 there, like one that does not exist.
#include "cli/run/volume_check.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/base/codec.h"
#include "core/client/client.h"
#include "core/volumes/workload_volumes.h"

namespace air::cli {

std::vector<std::string> foreign_volume_warnings(const Workload& w, Client& c) {
  std::vector<std::string> out;
  std::vector<std::string> keys = workload_volume_keys(w);
  if (keys.empty()) return out;
  try {
    std::string me = c.get_json("/api/2.0/preview/scim/v2/Me", 10000).value("userName", "");
    for (const auto& key : keys) {
      std::string full = key;
      for (auto& ch : full) ch = ch == '/' ? '.' : ch;
      auto r = c.request("GET", "/api/2.1/unity-catalog/volumes/" + percent_encode(full), {}, {}, 10000);
      if (r.status != 200) continue;
      auto j = nlohmann::json::parse(r.body, nullptr, false);
      std::string owner = j.is_object() ? j.value("owner", "") : "";
      if (owner.empty() || owner == me) continue;
      out.push_back(fmt::format("the workload names /Volumes/{}, which is owned by '{}', not by you ('{}'): '{}' can "
                                "read and change what the run writes there and decides who else may; to keep your "
                                "output yours, write to a volume you own (air volumes list)",
                                key, owner, me, owner));
    }
  } catch (const std::exception&) {
    // The workspace did not answer: the submit (or nothing, for a dry-run) says so itself.
  }
  return out;
}

}  // namespace air::cli
