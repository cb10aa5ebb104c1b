# For the browser scenarios (sourced after lib/common.bash): Debian's chromium, and playwright-core from the
# npm registry cached under the build folder (no browser download: it drives that chromium). Skips (125)
# when either is missing. Sets CHROMIUM, NPM_DIR and OUT_DIR (screenshots and figures).
CHROMIUM=${AIR_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$CHROMIUM" ] || { echo "skip: no chromium (apt-get install chromium)"; exit 125; }
command -v node >/dev/null && command -v npm >/dev/null || { echo "skip: no node/npm"; exit 125; }
OUT_DIR="$(cd "$AIR_BIN_DIR/.." && pwd)/web-test"
NPM_DIR="$(cd "$AIR_BIN_DIR/.." && pwd)/web-test-npm"
mkdir -p "$OUT_DIR" "$NPM_DIR"
if [ ! -f "$NPM_DIR/node_modules/playwright-core/package.json" ]; then
  (cd "$NPM_DIR" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund --silent playwright-core@1.65.1) \
    > "$E2E_TMP/npm.log" 2>&1 || { cat "$E2E_TMP/npm.log"; echo "skip: npm could not install playwright-core"; exit 125; }
fi

# Starts the local workspace and adds the users alice and bob with a token each: sets URL, ALICE and BOB.
web_two_users() {
  "$AIR" list > /dev/null
  URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
  "$AIR" -o json users add alice --token > "$E2E_TMP/alice.json"
  "$AIR" -o json users add bob --token > "$E2E_TMP/bob.json"
  ALICE=$(json_get "$E2E_TMP/alice.json" 'd["token_value"]')
  BOB=$(json_get "$E2E_TMP/bob.json" 'd["token_value"]')
}
