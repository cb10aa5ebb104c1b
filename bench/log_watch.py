# Watches one run of bench/logs.sh: polls `air -o json get run ID` every 50 ms until the run ends, and the
# workspace's resident memory (VmRSS of the server's pid) all the while. Prints one JSON document:
# {"done_ms": {node: when it ended}, "running_ms": {node: when its command started}, "rss_kb": [samples]}.
import json, subprocess, sys, time
air, run_id, server_pid = sys.argv[1], sys.argv[2], sys.argv[3]

def rss_kb():
    with open(f"/proc/{server_pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

done, running, rss = {}, {}, []
while True:
    rss.append(rss_kb())
    run = json.loads(subprocess.run([air, "-o", "json", "get", "run", run_id], capture_output=True, text=True).stdout)["data"]
    now = int(time.time() * 1000)
    for n in run["attempts"][-1]["nodes"] if run["attempts"] else []:
        if n["running_at_ms"]:
            running[n["rank"]] = n["running_at_ms"]
        if n["state"] in ("SUCCEEDED", "FAILED", "LOST") and n["rank"] not in done:
            done[n["rank"]] = now
    if run["state"] in ("SUCCEEDED", "FAILED", "CANCELED", "TIMED_OUT"):
        break
    time.sleep(0.05)
print(json.dumps({"state": run["state"], "done_ms": done, "running_ms": running, "rss_kb": rss}))
