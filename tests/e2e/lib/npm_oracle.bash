# Installs a test oracle's npm packages (PKG_DIR/package.json, pinned by its package-lock.json) from the npm
# registry into WORK_DIR (in the build tree, with npm's cache), once per change of the two files, and copies
# PKG_DIR/*.mjs (if any) there; exits 125 (skipped) when node/npm are missing or the registry cannot be reached.
# Usage: npm_oracle_install PKG_DIR WORK_DIR WHAT   (WHAT names the packages in the skip message)
npm_oracle_install() {
  local pkg=$1 work=$2 what=$3 tool stamp
  for tool in node npm; do
    command -v $tool >/dev/null || { echo "skipped: $tool is not installed (scripts/setup installs it)"; exit 125; }
  done
  mkdir -p "$work"
  stamp=$(cat "$pkg/package.json" "$pkg/package-lock.json" | sha256sum | cut -c1-16)
  if [ "$(cat "$work/.installed" 2>/dev/null)" != "$stamp" ]; then
    cp "$pkg/package.json" "$pkg/package-lock.json" "$work/"
    # Few retries: without a registry the test should skip in seconds, not minutes.
    if ! (cd "$work" && npm install --ignore-scripts --no-audit --no-fund --cache "$work/npm-cache" \
          --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=10000 \
          >"$work/npm-install.log" 2>&1); then
      if ! (cd "$work" && timeout 30 npm ping --cache "$work/npm-cache" >/dev/null 2>&1); then
        echo "skipped: npm cannot reach its registry, so $what cannot be installed (see $work/npm-install.log)"
        exit 125
      fi
      echo "error: npm install failed although the registry answers:"; tail -20 "$work/npm-install.log"; exit 1
    fi
    echo "$stamp" >"$work/.installed"
  fi
  local f
  for f in "$pkg"/*.mjs; do [ -e "$f" ] && cp "$f" "$work/"; done
  return 0
}
