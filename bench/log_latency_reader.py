# Reads `air logs --follow` output of the latency probe. The probe's command prints READY, then waits for
# GO_FILE before it echoes "PING <i> <unix_ns>" lines: this reader creates GO_FILE when READY arrives, so
# every PING is echoed after the follower is attached and the delay measured is the line's alone (not the
# time a follower started on a loaded machine took to exist). Prints "<echo_unix_ms> <delay_ms>" per PING.
import sys, time
go_file = sys.argv[1] if len(sys.argv) > 1 else None
for line in sys.stdin:
    now = time.time_ns()
    parts = line.split()
    if parts == ["READY"] and go_file:
        open(go_file, "w").close()
    elif len(parts) == 3 and parts[0] == "PING":
        print(f"{int(parts[2]) / 1e6:.3f} {(now - int(parts[2])) / 1e6:.3f}", flush=True)
