"""air-train's step figures for the bench scripts: the JSON lines rank 0 appends to `metrics_file`, unrounded.
The log a person watches has one readable line per step (`step N/M | loss ... | ... ms | ...`) and no JSON."""
import json
import os
import re

# The start of air-train's readable step line (trainer/metrics.cc): group 1 is the step.
STEP_LINE = re.compile(r"^step (\d+)/\d+ \| ")


def fresh(path):
    """path, with no file there yet (air-train appends to its metrics file)."""
    if os.path.exists(path):
        os.remove(path)
    return path


def step_lines(path):
    """The metrics file's step lines in order (evaluation lines left out); [] when there is no file."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [d for d in (json.loads(line) for line in f if line.strip()) if "loss" in d]
