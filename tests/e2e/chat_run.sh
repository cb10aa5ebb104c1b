#!/usr/bin/env bash
# A chat fine-tune through air, from the hub imitation (tests/hub/hub_fixture.py): the tiny model and a
# `messages` dataset with train and validation splits (JSON Lines). `air run --watch` of examples/tiny_chat's
# workload, pointed at the hub, on 1 node x 2 CPU ranks with eval_dataset: validation: the run succeeds,
# rank 0 logs eval_loss, and `air get run` shows eval_loss and the training loss. A second run of the same
# workload tokenizes nothing (the node's data cache).
set -euo pipefail
SRC=${AIR_SOURCE_DIR:?}
BIN=${AIR_BIN_DIR:?}
[ -x "$BIN/air-train" ] && [ -x "$BIN/air-torchrun" ] || { echo "skip: air-train / air-torchrun not built"; exit 125; }
source "$(dirname "$0")/lib/common.bash"

repos="$E2E_TMP/repos"
model="$repos/models/testorg/tiny-llama" data="$repos/datasets/testorg/chat-tiny"
mkdir -p "$model" "$data/data"
cp "$SRC"/examples/tiny_model/*.json "$model/"
cp "$SRC/examples/tiny_chat/chat_template.jinja" "$model/"   # the model's own template, beside its tokenizer
echo "# tiny" > "$model/README.md"
head -n 80 "$SRC/examples/data/chat_tiny.jsonl" > "$data/data/train-00000-of-00001.jsonl"
tail -n 16 "$SRC/examples/data/chat_tiny.jsonl" > "$data/data/validation-00000-of-00001.jsonl"
echo "# chat" > "$data/README.md"
TOKEN="hf_e2e_$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
python3 "$SRC/tests/hub/hub_fixture.py" --root "$repos" --token "$TOKEN" --blob-host localhost \
  --port-file "$E2E_TMP/hub.port" > "$E2E_TMP/hub.log" 2>&1 &
hub_pid=$!
trap 'rc=$?; set +e; kill $hub_pid 2>/dev/null; (exit $rc); cleanup' EXIT
for _ in $(seq 100); do [ -s "$E2E_TMP/hub.port" ] && break; sleep 0.1; done
endpoint="http://127.0.0.1:$(cat "$E2E_TMP/hub.port")"

# examples/tiny_chat/train.yaml with the hub's model and dataset, a validation split and a shared data cache.
python3 - "$SRC/examples/tiny_chat/train.yaml" "$E2E_TMP/train.yaml" "$endpoint" "$TOKEN" "$E2E_TMP" <<'PY'
import sys, yaml
src, dst, endpoint, token, tmp = sys.argv[1:]
w = yaml.safe_load(open(src))
w.pop("code_source", None)
w["command"] = w["command"].replace("cd $CODE_SOURCE_PATH\n", "")
# A command sees no host folder outside its sandbox: the hub cache and the data cache are volumes.
w["env_variables"].update({"HF_HOME": "/Volumes/main/default/hf", "HF_ENDPOINT": endpoint, "HF_TOKEN": token})
p = w["parameters"]
p.update({"model_name": "testorg/tiny-llama", "dataset_name": "testorg/chat-tiny", "eval_dataset": "validation",
          "data_cache_dir": "/Volumes/main/default/chat-cache", "max_steps": 12, "eval_every_steps": 6})
for k in ("chat_template", "eval_split_ratio"):
    p.pop(k)
yaml.safe_dump(w, open(dst, "w"), sort_keys=False)
PY

for attempt in 1 2; do
  "$AIR" run -f "$E2E_TMP/train.yaml" --watch > "$E2E_TMP/run$attempt.out" 2>&1 || { tail -40 "$E2E_TMP/run$attempt.out"; fail "run $attempt failed"; }
  id=$("$AIR" -o json list --all-status | json_get - 'd["runs"][0]["run_id"]')
  [ "$(run_field "$id" 'd["state"]')" = SUCCEEDED ] || fail "run $id did not succeed"
  "$AIR" logs "$id" --node 0 > "$E2E_TMP/run$attempt.log"
  grep -q "chat template: .*chat_template.jinja, train_on assistant" "$E2E_TMP/run$attempt.log" ||
    fail "the run did not use the model's chat template: $(grep -i template "$E2E_TMP/run$attempt.log")"
  grep -q "eval dataset: validation from hub" "$E2E_TMP/run$attempt.log" || fail "no validation split: $(grep -i eval "$E2E_TMP/run$attempt.log")"
  grep -qE '^eval step 12 \| eval_loss [0-9.]+' "$E2E_TMP/run$attempt.log" || fail "no evaluation after step 12: $(grep -i eval "$E2E_TMP/run$attempt.log")"
  "$AIR" get run "$id" > "$E2E_TMP/get$attempt.txt"
  grep -qE '^ +eval_loss +[0-9.]+ +step 12$' "$E2E_TMP/get$attempt.txt" || fail "air get run shows no eval_loss: $(cat "$E2E_TMP/get$attempt.txt")"
  grep -qE '^ +loss +[0-9.]+ +step 12$' "$E2E_TMP/get$attempt.txt" || fail "air get run shows no loss"
done
# Rank 0 prints; in the first run either rank may have taken the lock first and tokenized (the other read).
grep -qE "data cache: (miss, tokenized 80 records|hit)" "$E2E_TMP/run1.log" || fail "the first run did not use the cache: $(grep -i cache "$E2E_TMP/run1.log")"
grep -q "data cache: hit .*nothing tokenized" "$E2E_TMP/run2.log" || fail "the second run tokenized again: $(grep -i cache "$E2E_TMP/run2.log")"
[ "$(find "$AIR_HOME/volumes/main/default/chat-cache" -mindepth 1 -maxdepth 1 -type d | wc -l)" = 2 ] ||
  fail "expected 2 cache entries (train and validation), got: $(ls "$AIR_HOME/volumes/main/default/chat-cache"); $(grep -E 'data|eval' "$E2E_TMP/run1.log" | grep -v '^ ')"
echo "chat run: eval_loss $(grep -E '^ +eval_loss' "$E2E_TMP/get1.txt" | awk '{print $2}') in air get run; the second run read the cache"
