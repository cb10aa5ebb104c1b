// The MLflow tracking REST subset training scripts use, at MLflow's documented paths
// (/api/2.0/mlflow/...), independent of the HTTP library like the secrets handler. Errors use MLflow's
// shape {"error_code", "message"}.
#pragma once
#include <string>

#include "server/mlflow_store.h"
#include "server/secrets_api.h"  // ApiReply

namespace air::server {

bool is_mlflow_path(const std::string& path);

// `authenticated`: the server accepted the bearer token (the workspace token, or a node token: the
// MLFLOW_TRACKING_TOKEN a run's nodes get). Any authenticated caller may use the whole subset.
ApiReply handle_mlflow_request(MlflowStore& store, const std::string& method, const std::string& path,
                               const std::string& body, bool authenticated);

// JSON shapes, shared with the workspace's own API (`air get run`).
nlohmann::json metric_to_json(const MlflowMetric& m);
nlohmann::json run_to_json(const MlflowRun& r);

}  // namespace air::server
