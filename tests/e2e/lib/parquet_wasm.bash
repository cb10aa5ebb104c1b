# Installs parquet-wasm + apache-arrow (tests/data/parquet/package*.json) from the npm registry into a folder
# of the build tree, once; exits 125 (skipped) when node/npm are missing or the registry cannot be reached.
# Usage: parquet_wasm_install SRC_DIR WORK_DIR
parquet_wasm_install() {
  local oracle_src=$1/tests/data/parquet work=$2 tool
  for tool in node npm; do
    command -v $tool >/dev/null || { echo "skipped: $tool is not installed (scripts/setup installs it)"; exit 125; }
  done
  mkdir -p "$work"
  local stamp
  stamp=$(cat "$oracle_src/package.json" "$oracle_src/package-lock.json" | sha256sum | cut -c1-16)
  if [ "$(cat "$work/.installed" 2>/dev/null)" != "$stamp" ]; then
    cp "$oracle_src/package.json" "$oracle_src/package-lock.json" "$work/"
    if ! (cd "$work" && npm install --ignore-scripts --no-audit --no-fund --cache "$work/npm-cache" \
          --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=10000 \
          >"$work/npm-install.log" 2>&1); then
      if ! (cd "$work" && timeout 30 npm ping --cache "$work/npm-cache" >/dev/null 2>&1); then
        echo "skipped: npm cannot reach its registry, so parquet-wasm cannot be installed (see $work/npm-install.log)"
        exit 125
      fi
      echo "error: npm install failed although the registry answers:"; tail -20 "$work/npm-install.log"; exit 1
    fi
    echo "$stamp" >"$work/.installed"
  fi
  cp "$oracle_src"/*.mjs "$work/"
}
