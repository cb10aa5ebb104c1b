// Wire types of the scheduling routes (/api/air/v1/quotas, /api/air/v1/usage; server/api/scheduling.cc),
// kept beside api.h's so that only the CLI verbs and the routes that speak them include them. Lenient on
// read like api.h: a missing field keeps its default, unknown fields are ignored.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace air::api {

// GET /quotas lists them; POST /quotas sets one (admins); POST /quotas/delete removes one (admins).
struct QuotaInfo {
  std::string kind;        // user | group
  std::string name;
  std::string pool = "*";  // one pool, or * for every pool together
  int max_gpus = -1;       // GPUs at once; -1: no limit
  int max_queued = -1;     // runs waiting; -1: no limit
  std::string set_by;      // an admin's name, or server.conf
  int64_t set_at_ms = 0;
};

struct QuotaList {
  std::vector<QuotaInfo> quotas;
};

// GET /usage?by=user|group|pool|class|policy&since_ms=N[&user=NAME]: GPU time summed per key.
struct UsageRow {
  std::string key;
  double gpu_seconds = 0, wall_seconds = 0;
  int attempts = 0, runs = 0;
};

struct UsageReport {
  std::string by = "user";
  int64_t since_ms = 0, until_ms = 0;
  std::string user;  // only this user's usage ("" all: admins)
  std::vector<UsageRow> rows;  // largest GPU time first
};

void to_json(nlohmann::json& j, const QuotaInfo& v);
void from_json(const nlohmann::json& j, QuotaInfo& v);
void to_json(nlohmann::json& j, const QuotaList& v);
void from_json(const nlohmann::json& j, QuotaList& v);
void to_json(nlohmann::json& j, const UsageRow& v);
void from_json(const nlohmann::json& j, UsageRow& v);
void to_json(nlohmann::json& j, const UsageReport& v);
void from_json(const nlohmann::json& j, UsageReport& v);

}  // namespace air::api
