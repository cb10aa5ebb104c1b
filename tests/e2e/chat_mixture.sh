#!/usr/bin/env bash
# A mixture of datasets through air-train alone (the tiny model on CPU): `datasets:` with a messages file
# (weight 3) and an Alpaca file (weight 1), each with its own format; the log shows each dataset, the draw
# and eval_split_ratio held out of each; --preview-data shows the first records of each; a misspelt key in an
# entry is a located error (exit 2); and the checkpoint carries the chat_template: it was trained with
# (chat_template.jinja and tokenizer_config.json's chat_template).
set -euo pipefail
SRC=${AIR_SOURCE_DIR:?}
BIN=${AIR_BIN_DIR:?}
[ -x "$BIN/air-train" ] || { echo "skip: air-train not built"; exit 125; }
TMP=$(mktemp -d /tmp/air-chat-mix-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export OMP_NUM_THREADS=1
cd "$SRC/examples"
head -n 40 data/chat_tiny.jsonl > "$TMP/chat.jsonl"
cat > "$TMP/train.yaml" <<YAML
model_name: tiny_model
init: random
chat_template: tiny_chat/chat_template.jinja
max_seq_len: 128
seed: 7
max_steps: 2
per_device_batch_size: 2
gradient_accumulation_steps: 1
eval_split_ratio: 0.1
output_dir: $TMP/ckpt
data_cache_dir: $TMP/cache
datasets:
  - {name: $TMP/chat.jsonl, weight: 3}
  - name: data/alpaca_tiny.json
    format: alpaca
YAML
"$BIN/air-train" --config "$TMP/train.yaml" > "$TMP/train.log" 2>&1 || { tail -30 "$TMP/train.log"; fail "training on the mixture failed"; }
grep -q "^dataset 1: $TMP/chat.jsonl" "$TMP/train.log" || fail "no line for dataset 1: $(grep -i dataset "$TMP/train.log")"
grep -q "^dataset 2: data/alpaca_tiny.json" "$TMP/train.log" || fail "no line for dataset 2"
[ "$(grep -c '^eval: [0-9]* examples held out' "$TMP/train.log")" = 2 ] || fail "eval_split_ratio should hold out of each dataset: $(grep '^eval' "$TMP/train.log")"
mix=$(grep '^mixture: ' "$TMP/train.log") || fail "no mixture line"
python3 - "$mix" <<'PY' || fail "the draw is not 3:1 ($mix)"
import re, sys
k = [int(x) for x in re.findall(r"-> (\d+) \(", sys.argv[1])]
assert len(k) == 2 and abs(k[0] / (k[0] + k[1]) - 0.75) < 0.02, k
PY
cmp -s tiny_chat/chat_template.jinja "$TMP/ckpt/chat_template.jinja" || fail "the checkpoint's chat_template.jinja is not the one trained with"
python3 - "$TMP/ckpt/tokenizer_config.json" tiny_chat/chat_template.jinja <<'PY' || fail "tokenizer_config.json's chat_template is not the one trained with"
import json, sys
assert json.load(open(sys.argv[1]))["chat_template"] == open(sys.argv[2]).read()
PY
echo "mixture: two datasets in their own formats, drawn 3:1 ($mix); eval held out of each; the template saved"

"$BIN/air-train" --config "$TMP/train.yaml" --preview-data 2 -o json > "$TMP/preview.jsonl" 2>/dev/null || fail "--preview-data on a mixture failed"
python3 - "$TMP/preview.jsonl" <<'PY' || fail "the preview should show 2 records of each dataset"
import json, sys
out = [json.loads(l) for l in open(sys.argv[1])]
assert len(out) == 4, len(out)
assert out[0]["text"].startswith("<|begin_of_text|><|") and "### Instruction:" in out[2]["text"], [o["text"][:30] for o in out]
PY
sed -i 's/    format: alpaca/    fromat: alpaca/' "$TMP/train.yaml"
rc=0
"$BIN/air-train" --config "$TMP/train.yaml" > "$TMP/bad.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a misspelt key in datasets: should exit 2, got $rc"
grep -qF "error: 'datasets': entry 2: unknown key 'fromat' (did you mean 'format'?)" "$TMP/bad.log" || fail "no located error: $(cat "$TMP/bad.log")"
echo "preview: the first 2 records of each dataset; a misspelt key in an entry is a located error"
