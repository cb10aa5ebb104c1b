# Logs metrics to the workspace's MLflow API as a training script would (stdlib only): loss and lr for N
# steps, one log-batch per step, DELAY seconds apart. Usage: log_metrics.py live N DELAY
import json, math, os, sys, time, urllib.request

uri, run, tok = os.environ["MLFLOW_TRACKING_URI"], os.environ["MLFLOW_RUN_ID"], os.environ["MLFLOW_TRACKING_TOKEN"]
mode, n, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])


def post(metrics):
    body = json.dumps({"run_id": run, "metrics": metrics}).encode()
    req = urllib.request.Request(uri + "/api/2.0/mlflow/runs/log-batch", data=body,
                                 headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    urllib.request.urlopen(req).read()


now = int(time.time() * 1000)
if mode == "live":
    for s in range(n):
        loss = 7.0 * math.exp(-s / 30.0) + 0.1 * math.sin(s)
        post([{"key": "loss", "value": loss, "timestamp": now + s, "step": s},
              {"key": "lr", "value": 1e-3 * min(1.0, (s + 1) / 10), "timestamp": now + s, "step": s}])
        time.sleep(delay)
    print("metrics-logged", flush=True)
