# Gives a running run a 1,000,000-line node log and a 200,000-point metric quickly, through the workspace's
# own routes (the log append agents use, MLflow's log-batch), so the browser test need not wait for a node
# to print and ship 45 MB. Usage: fill_big_run.py SERVER_JSON RUN_ID LINES POINTS
import http.client, json, math, sys, time, urllib.parse

info = json.load(open(sys.argv[1]))
run, lines, points = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
u = urllib.parse.urlparse(info["url"])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
H = {"Authorization": "Bearer " + info["token"]}


def call(method, path, body=None, ctype="application/json"):
    c.request(method, path, body=body, headers={**H, "Content-Type": ctype})
    r = c.getresponse()
    data = r.read()
    if r.status >= 300:
        sys.exit(f"{method} {path}: {r.status} {data[:300]!r}")
    return json.loads(data)


now = int(time.time() * 1000)
node = f"/api/air/v1/runs/{run}/attempts/1/nodes/0/logs"
offset, batch = 0, 100000
for start in range(0, lines, batch):
    chunk = "".join(f"{now} o big log line {i + 1} of {lines}\n" for i in range(start, min(lines, start + batch))).encode()
    offset = call("POST", f"{node}?offset={offset}", chunk, "application/octet-stream")["size"]
mlflow = call("GET", f"/api/air/v1/runs/{run}")["attempts"][-1]["mlflow_run_id"]
for b in range(0, points, 1000):
    metrics = [{"key": "loss", "value": 5.0 * math.exp(-s / 50000.0) + 0.2 * math.sin(s / 7.0), "timestamp": now + s,
                "step": s} for s in range(b, min(points, b + 1000))]
    call("POST", "/api/2.0/mlflow/runs/log-batch", json.dumps({"run_id": mlflow, "metrics": metrics}))
print(f"filled: {lines} lines ({offset} bytes), {points} points")
