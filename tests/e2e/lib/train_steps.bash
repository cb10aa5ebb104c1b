# air-train's step figures for the e2e scripts (source after common.bash). The log a person watches has one
# readable line per logged step, `step N/M | loss X | ...` (loss rounded to 4 decimals); the unrounded figures
# are the JSON lines rank 0 appends to `metrics_file` (docs/trainer.md, "Training loop").

# "N X" (step, loss), one per line, from a log's readable step lines.
log_losses() { sed -nE 's#^step ([0-9]+)/[0-9]+ \| loss ([-+0-9.eEnaif]+) \|.*#\1 \2#p' "$1"; }

# "N X" from a metrics file's JSON step lines (evaluation lines, which have no "loss", are left out).
metrics_losses() {
  python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if "loss" in d:
        print(d["step"], repr(d["loss"]))
PY
}

# Fails when a log has a JSON step line: each step is said once, as its readable line.
no_json_steps() { ! grep -q '^{"step"' "$1" || fail "$1 prints JSON step lines: $(grep -m1 '^{"step"' "$1")"; }
