#!/usr/bin/env bash
# A cold submit of a big tree on the embedded local workspace: `air run` (snapshot, hand-over, submit) after
# one file of bench/snapshot.sh's tree changed, with the archive adopted by the workspace (a hard link of the
# CLI's cached archive; the default) beside the same submit uploading it over loopback (AIR_SNAPSHOT_ADOPT=0,
# what every submit did before), alternating, N rounds (default 3). Prints the medians of the CLI's wall
# time, its CPU and the workspace's CPU. Tree: AIR_BENCH_SNAPSHOT_MB (default 850) MB in
# AIR_BENCH_SNAPSHOT_FILES (default 20000) files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${AIR_BIN_DIR:-$here/../build/bin}
AIR="$bin/air"
N=${1:-3}
mb=${AIR_BENCH_SNAPSHOT_MB:-850}
files=${AIR_BENCH_SNAPSHOT_FILES:-20000}
[ -x "$bin/snapshot_bench" ] && [ -x "$AIR" ] || { echo "cold_submit.sh: build first (scripts/build)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/air-bench-cold-XXXXXX)
export AIR_HOME="$tmp/home" AIR_CONFIG_FILE="$tmp/none"
unset AIR_HOST AIR_TOKEN
trap '"$AIR" cancel --all -y >/dev/null 2>&1 || true; sleep 1; "$AIR" server stop >/dev/null 2>&1 || true; chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

echo "generating $files files, $mb MB ..." >&2
"$bin/snapshot_bench" generate "$tmp/proj" "$mb" "$files" 1
cat > "$tmp/proj/cold.yaml" <<'YAML'
experiment_name: bench-cold-submit
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
code_source:
  type: snapshot
  snapshot:
    root_path: .
command: "true"
max_retries: 0
YAML
"$AIR" list > /dev/null  # the workspace starts outside the timing
wspid=$("$AIR" server status | sed -n 's/.*(pid \([0-9]*\)).*/\1/p')
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
results="$tmp/results.txt"
for i in $(seq 1 "$N"); do
  for mode in adopt upload; do
    echo "round $i $mode" >> "$tmp/proj/changed.txt"  # a changed tree: a new archive, a new digest
    sleep 2.5  # the snapshot cache does not trust files modified in the last 2 s
    sync       # nothing left to write back from the change or the previous round
    w0=$(ticks "$wspid")
    adopt=1
    [ "$mode" = upload ] && adopt=0
    /usr/bin/time -f "%e %U %S" -o "$tmp/time" env AIR_SNAPSHOT_ADOPT=$adopt "$AIR" -o json run -f "$tmp/proj/cold.yaml" > "$tmp/out.json"
    w1=$(ticks "$wspid")
    read -r wall user sys < "$tmp/time"
    sent=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["data"]; print(d["snapshot_uploaded_bytes"], int(d["snapshot_adopted"]))' "$tmp/out.json")
    echo "$mode $wall $user $sys $(( w1 - w0 )) $sent" >> "$results"
    # The node unpacks the new snapshot (850 MB into its code cache) and runs `true`: that ends before the
    # next round starts, so none of it lands in another round's figures.
    id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["run_id"])' "$tmp/out.json")
    for _ in $(seq 1 600); do
      state=$("$AIR" -o json get run "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["state"])')
      case "$state" in SUCCEEDED|FAILED|CANCELED|TIMED_OUT) break ;; esac
      sleep 0.2
    done
    [ "$state" = SUCCEEDED ] || { echo "cold_submit.sh: run $id ended $state" >&2; exit 1; }
  done
done

python3 - "$results" "$hz" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
hz = int(sys.argv[2])
med = lambda xs: statistics.median(xs)
out = {}
for mode in ("upload", "adopt"):
    rs = [r for r in rows if r[0] == mode]
    out[mode] = dict(wall=med([float(r[1]) for r in rs]), cli=med([float(r[2]) + float(r[3]) for r in rs]),
                     ws=med([int(r[4]) / hz for r in rs]), sent=max(int(r[5]) for r in rs),
                     adopted=all(r[6] == "1" for r in rs), n=len(rs))
print(f"cold submit of a changed tree, local workspace; load {sys.argv[3]}")
print(f"{'':<42}{'wall s':>9}{'CLI CPU s':>11}{'workspace CPU s':>17}{'bytes sent':>13}")
for mode, label in (("upload", "upload over loopback (AIR_SNAPSHOT_ADOPT=0)"), ("adopt", "adopted: the archive linked (default)")):
    o = out[mode]
    print(f"{label:<42}{o['wall']:>9.3f}{o['cli']:>11.2f}{o['ws']:>17.2f}{o['sent']:>13}")
print(f"adopted on every default run: {'yes' if out['adopt']['adopted'] else 'NO'}; medians of {out['adopt']['n']}; "
      f"wall {out['upload']['wall'] / out['adopt']['wall']:.2f}x faster adopted")
PY
