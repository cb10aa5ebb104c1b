# Reads `air logs --follow` output; for each "PING <i> <unix_ns>" line prints the delay (ms) from the
# node's echo to this process reading it.
import sys, time
for line in sys.stdin:
    now = time.time_ns()
    parts = line.split()
    if len(parts) == 3 and parts[0] == "PING":
        print(f"{(now - int(parts[2])) / 1e6:.3f}", flush=True)
