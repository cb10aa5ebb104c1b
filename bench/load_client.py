#!/usr/bin/env python3
# The client half of bench/load.sh: talks to the workspace's API directly (keep-alive connections).
#  submit URL TOKEN RUNS THREADS  -> submits RUNS trivial 2-node runs from THREADS threads, waits for all
#                                    to end, checks states and logs; prints JSON figures
#  getrun URL TOKEN RUN_ID SECONDS PROCS -> GET /runs/{id} from PROCS processes (4 connections each)
import http.client, json, multiprocessing, statistics, sys, threading, time, urllib.parse

YAML = """experiment_name: bench-load
compute: {accelerator_type: CPU_1xHOST, num_accelerators: 2}
command: echo "node $NODE_RANK ok"
max_retries: 0
"""


class Api:
    def __init__(self, url, token):
        u = urllib.parse.urlparse(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        self.h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}

    def call(self, method, path, body=None):
        self.conn.request(method, "/api/air/v1" + path, body=body, headers=self.h)
        r = self.conn.getresponse()
        data = r.read()
        return r.status, data


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def submit(url, token, runs, threads):
    lat, ids, lock = [], [], threading.Lock()
    todo = list(range(runs))

    def worker():
        api = Api(url, token)
        while True:
            with lock:
                if not todo:
                    return
                k = todo.pop()
            body = json.dumps({"workload_yaml": YAML, "file_name": "load.yaml", "base_dir": "/tmp",
                               "idempotency_key": "load-%d-%f" % (k, t0)})
            s = time.monotonic()
            st, data = api.call("POST", "/runs", body)
            e = time.monotonic() - s
            if st != 201:
                raise SystemExit("submit failed: %d %s" % (st, data[:200]))
            with lock:
                lat.append(e)
                ids.append(json.loads(data)["run_id"])

    t0 = time.monotonic()
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts: t.start()
    for t in ts: t.join()
    submitted = time.monotonic() - t0
    api = Api(url, token)
    states = {}
    while True:
        for i in ids:
            if states.get(i) in ("SUCCEEDED", "FAILED", "CANCELED", "TIMED_OUT"):
                continue
            st, data = api.call("GET", "/runs/" + i)
            states[i] = json.loads(data)["state"]
        if all(s in ("SUCCEEDED", "FAILED", "CANCELED", "TIMED_OUT") for s in states.values()):
            break
        if time.monotonic() - t0 > 600:
            break
        time.sleep(0.2)
    done = time.monotonic() - t0
    complete = 0
    for i in ids:
        ok = True
        for n in (0, 1):
            st, data = api.call("GET", "/runs/%s/attempts/1/nodes/%d/logs" % (i, n))
            ok = ok and st == 200 and data.decode().rstrip("\n").endswith("node %d ok" % n)
        complete += ok
    print(json.dumps({"runs": runs, "threads": threads, "submit_s": round(submitted, 2),
                      "submit_per_s": round(runs / submitted, 1), "p50_ms": round(pct(lat, 50) * 1000, 1),
                      "p95_ms": round(pct(lat, 95) * 1000, 1), "all_done_s": round(done, 1),
                      "runs_per_s": round(runs / done, 2),
                      "succeeded": sum(s == "SUCCEEDED" for s in states.values()), "complete_logs": complete}))


def getrun_proc(args):
    url, token, run_id, seconds = args
    lat = []
    api = Api(url, token)
    end = time.monotonic() + seconds
    errors = 0
    while time.monotonic() < end:
        s = time.monotonic()
        st, _ = api.call("GET", "/runs/" + run_id)
        lat.append(time.monotonic() - s)
        errors += st != 200
    return lat, errors


def getrun(url, token, run_id, seconds, procs):
    with multiprocessing.Pool(procs) as p:
        res = p.map(getrun_proc, [(url, token, run_id, seconds)] * procs)
    lat = [x for r in res for x in r[0]]
    print(json.dumps({"requests": len(lat), "per_s": round(len(lat) / seconds), "procs": procs,
                      "p50_ms": round(pct(lat, 50) * 1000, 2), "p99_ms": round(pct(lat, 99) * 1000, 2),
                      "errors": sum(r[1] for r in res)}))


if __name__ == "__main__":
    if sys.argv[1] == "submit":
        submit(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        getrun(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), int(sys.argv[6]))
