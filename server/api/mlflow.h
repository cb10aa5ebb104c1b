// The MLflow tracking REST subset training scripts use, at MLflow's documented paths
// (/api/2.0/mlflow/...), independent of the HTTP library like the secrets handler. Errors use MLflow's
// shape {"error_code", "message"}.
#pragma once
#include <optional>
#include <string>

#include "server/store/mlflow.h"
#include "server/api/secrets.h"  // ApiReply

namespace air::server {

bool is_mlflow_path(const std::string& path);

// The parameters of a request: its JSON body, with query parameters filling what the body lacks.
// nullopt when the body is not a JSON object.
std::optional<nlohmann::json> mlflow_params(const std::string& target, const std::string& body);
// The one place that decides which MLflow run a request names (run_id, else run_uuid), used both for the
// ownership check and by the handler itself; "" when none.
std::string mlflow_run_named(const std::string& target, const std::string& body);

// `authenticated`: the server accepted the bearer token (the workspace token, or a node token: the
// MLFLOW_TRACKING_TOKEN a run's nodes get). Any authenticated caller may use the whole subset.
ApiReply handle_mlflow_request(MlflowStore& store, const std::string& method, const std::string& path,
                               const std::string& body, bool authenticated);

// JSON shapes, shared with the workspace's own API (`air get run`).
nlohmann::json metric_to_json(const MlflowMetric& m);
nlohmann::json run_to_json(const MlflowRun& r);

}  // namespace air::server
