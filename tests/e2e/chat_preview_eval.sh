#!/usr/bin/env bash
# Chat data through air-train alone (the tiny model on CPU, examples/tiny_chat's template and data):
#  1. --preview-data 3 -o json: one object per record, in order; labels -100 except the assistant turns,
#     whose end-of-turn tokens are all trained and no other; a template that raises gives {"error": ...}
#     and exit 1; without -o json and with NO_COLOR the trained text sits between {+ +} markers.
#  2. eval_loss after training equals a separate forward over the eval set: the saved checkpoint trained
#     for one step on exactly the eval examples (one row each, all in one step, a vanishing learning rate)
#     reports the same loss.
#  3. the tokenized cache: the second start tokenizes nothing (the log says so); a changed template makes a
#     new entry.
set -euo pipefail
SRC=${AIR_SOURCE_DIR:?}
BIN=${AIR_BIN_DIR:?}
[ -x "$BIN/air-train" ] || { echo "skip: air-train not built"; exit 125; }
TMP=$(mktemp -d /tmp/air-chat-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export OMP_NUM_THREADS=1
cd "$SRC/examples"
head -n 80 data/chat_tiny.jsonl > "$TMP/train.jsonl"
tail -n 16 data/chat_tiny.jsonl > "$TMP/eval.jsonl"
common=(--set model_name=tiny_model --set init=random --set chat_template=tiny_chat/chat_template.jinja
        --set max_seq_len=128 --set seed=7 --set "data_cache_dir=$TMP/cache")

# ---- 1. preview ----
"$BIN/air-train" "${common[@]}" --set "dataset_name=$TMP/train.jsonl" --preview-data 3 -o json > "$TMP/preview.jsonl" 2> "$TMP/preview.err" ||
  { cat "$TMP/preview.err"; fail "--preview-data failed"; }
python3 - "$TMP/preview.jsonl" "$TMP/train.jsonl" <<'PY' || fail "the preview's JSON is wrong"
import json, sys
out = [json.loads(l) for l in open(sys.argv[1])]
recs = [json.loads(l) for l in open(sys.argv[2])][:3]
assert len(out) == 3, f"{len(out)} objects"
EOS, BOS = 1022, 1021  # examples/tiny_model: <|end_of_text|>, <|begin_of_text|>
for o, r in zip(out, recs):
    assert set(o) == {"text", "input_ids", "labels"}, o.keys()
    ids, labels = o["input_ids"], o["labels"]
    assert len(ids) == len(labels)
    assert ids[0] == BOS and labels[0] == -100
    assert all(l == -100 or l == i for i, l in zip(ids, labels))
    assert o["text"].startswith("<|begin_of_text|><|"), o["text"][:40]
    # Every message ends with EOS; exactly the assistants' are trained.
    eos_flags = [l != -100 for i, l in zip(ids, labels) if i == EOS]
    roles = [m["role"] for m in r["messages"]]
    assert eos_flags == [x == "assistant" for x in roles], (eos_flags, roles)
    # The trained tokens are a minority: headers, system and user turns are masked.
    trained = sum(l != -100 for l in labels)
    assert 0 < trained < len(ids) // 2, (trained, len(ids))
    for m in r["messages"]:
        assert m["content"].strip() in o["text"]
print("preview: 3 records, assistant turns and their end-of-turn tokens trained, nothing else")
PY
NO_COLOR=1 "$BIN/air-train" "${common[@]}" --set "dataset_name=$TMP/train.jsonl" --preview-data 1 > "$TMP/preview.txt" 2>/dev/null
first_answer=$(python3 -c 'import json,sys; m=json.loads(open(sys.argv[1]).readline())["messages"]; print([x["content"] for x in m if x["role"]=="assistant"][0])' "$TMP/train.jsonl")
grep -qF "{+$first_answer<|end_of_text|>+}" "$TMP/preview.txt" || { cat "$TMP/preview.txt"; fail "no {+ +} markers around the first answer"; }
printf '%s\n' '{% if messages[0]["role"] != "user" %}{{ raise_exception("start with the user") }}{% endif %}' > "$TMP/strict.jinja"
cat tiny_chat/chat_template.jinja >> "$TMP/strict.jinja"
printf '%s\n' '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}' \
  '{"messages": [{"role": "assistant", "content": "me first"}]}' > "$TMP/two.jsonl"
rc=0
"$BIN/air-train" "${common[@]}" --set "dataset_name=$TMP/two.jsonl" --set "chat_template=$TMP/strict.jinja" --preview-data 5 -o json \
  > "$TMP/two.out" 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "a record the template rejects should exit 1, got $rc"
[ "$(wc -l < "$TMP/two.out")" = 2 ] || fail "expected 2 lines: $(cat "$TMP/two.out")"
sed -n 2p "$TMP/two.out" | grep -qF '{"error":"'"$TMP"'/two.jsonl:2: the chat template raised: ' || fail "no located error object: $(sed -n 2p "$TMP/two.out")"
echo "preview: {+ +} markers with NO_COLOR; a raising template gives {\"error\": ...} and exit 1"

# ---- 2. eval_loss equals a separate forward over the eval set ----
train=(--set "dataset_name=$TMP/train.jsonl" --set "eval_dataset=$TMP/eval.jsonl" --set packing=true
       --set per_device_batch_size=4 --set learning_rate=0.02 --set max_steps=12 --set eval_every_steps=6
       --set "output_dir=$TMP/ckpt" --set "metrics_file=$TMP/metrics.jsonl")
"$BIN/air-train" "${common[@]}" "${train[@]}" > "$TMP/train1.log" 2>&1 || { tail -30 "$TMP/train1.log"; fail "training failed"; }
grep -q "data cache: miss, tokenized 80 records" "$TMP/train1.log" || fail "the first start did not tokenize into the cache: $(grep -i cache "$TMP/train1.log")"
grep -q "eval: 16 examples" "$TMP/train1.log" || fail "no eval set: $(grep -i eval "$TMP/train1.log")"
evals=$(grep -c '"eval_loss"' "$TMP/metrics.jsonl")
[ "$evals" = 2 ] || fail "expected evaluations at steps 6 and 12, got $evals"
eval_loss=$(grep '"eval_loss"' "$TMP/metrics.jsonl" | tail -1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["eval_loss"])')
n_eval=$(grep -o 'eval: [0-9]* examples' "$TMP/train1.log" | head -1 | grep -o '[0-9]*')
"$BIN/air-train" --set "model_name=$TMP/ckpt" --set init=pretrained --set chat_template=tiny_chat/chat_template.jinja \
  --set max_seq_len=128 --set "dataset_name=$TMP/eval.jsonl" --set packing=false --set "per_device_batch_size=$n_eval" \
  --set gradient_accumulation_steps=1 --set learning_rate=1e-12 --set max_steps=1 --set save=false --set data_cache_dir=off \
  --set "metrics_file=$TMP/forward.jsonl" > "$TMP/forward.log" 2>&1 || { tail -20 "$TMP/forward.log"; fail "the separate forward failed"; }
fwd=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["loss"])' "$TMP/forward.jsonl")
python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(a - b) <= 1e-4 * max(1, abs(b)) else 1)" "$eval_loss" "$fwd" ||
  fail "eval_loss $eval_loss differs from the separate forward's loss $fwd"
echo "eval: eval_loss $eval_loss after step 12 = a separate forward over the $n_eval eval examples ($fwd)"

# ---- 3. the cache ----
"$BIN/air-train" "${common[@]}" "${train[@]}" --set max_steps=1 --set save=false > "$TMP/train2.log" 2>&1 || { tail -20 "$TMP/train2.log"; fail "the second start failed"; }
grep -q "data cache: hit .*nothing tokenized" "$TMP/train2.log" || fail "the second start tokenized again: $(grep -i cache "$TMP/train2.log")"
entries=$(find "$TMP/cache" -mindepth 1 -maxdepth 1 -type d | wc -l)
{ echo '{#- the same template, edited -#}'; cat tiny_chat/chat_template.jinja; } > "$TMP/edited.jinja"
"$BIN/air-train" "${common[@]}" "${train[@]}" --set max_steps=1 --set save=false --set "chat_template=$TMP/edited.jinja" > "$TMP/train3.log" 2>&1 ||
  { tail -20 "$TMP/train3.log"; fail "the third start failed"; }
grep -q "data cache: miss" "$TMP/train3.log" || fail "a changed template reused the cache"
[ "$(find "$TMP/cache" -mindepth 1 -maxdepth 1 -type d | wc -l)" = $((entries + 2)) ] || fail "a changed template did not make new entries (train and eval)"
echo "cache: second start tokenized nothing; a changed template made new entries"
