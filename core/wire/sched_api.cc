// JSON of the scheduling routes' wire types (sched_api.h).
#include "core/wire/sched_api.h"

namespace air::api {

using nlohmann::json;

namespace {

template <class T>
void get(const json& j, const char* name, T& out) {
  auto it = j.find(name);
  if (it != j.end() && !it->is_null()) out = it->get<T>();
}

}  // namespace

void to_json(json& j, const QuotaInfo& v) {
  j = {{"kind", v.kind}, {"name", v.name}, {"pool", v.pool}, {"max_gpus", v.max_gpus}, {"max_queued", v.max_queued},
       {"set_by", v.set_by}, {"set_at_ms", v.set_at_ms}};
}

void from_json(const json& j, QuotaInfo& v) {
  get(j, "kind", v.kind), get(j, "name", v.name), get(j, "pool", v.pool), get(j, "max_gpus", v.max_gpus);
  get(j, "max_queued", v.max_queued), get(j, "set_by", v.set_by), get(j, "set_at_ms", v.set_at_ms);
}

void to_json(json& j, const QuotaList& v) { j = {{"quotas", v.quotas}}; }
void from_json(const json& j, QuotaList& v) { get(j, "quotas", v.quotas); }

void to_json(json& j, const UsageRow& v) {
  j = {{"key", v.key}, {"gpu_seconds", v.gpu_seconds}, {"gpu_hours", v.gpu_seconds / 3600.0},
       {"wall_seconds", v.wall_seconds}, {"attempts", v.attempts}, {"runs", v.runs}};
}

void from_json(const json& j, UsageRow& v) {
  get(j, "key", v.key), get(j, "gpu_seconds", v.gpu_seconds), get(j, "wall_seconds", v.wall_seconds);
  get(j, "attempts", v.attempts), get(j, "runs", v.runs);
}

void to_json(json& j, const UsageReport& v) {
  j = {{"by", v.by}, {"since_ms", v.since_ms}, {"until_ms", v.until_ms}, {"user", v.user}, {"rows", v.rows}};
}

void from_json(const json& j, UsageReport& v) {
  get(j, "by", v.by), get(j, "since_ms", v.since_ms), get(j, "until_ms", v.until_ms), get(j, "user", v.user);
  get(j, "rows", v.rows);
}

}  // namespace air::api
