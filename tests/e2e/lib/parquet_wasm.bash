# Installs parquet-wasm + apache-arrow (tests/data/parquet/package*.json) from the npm registry into a folder
# of the build tree, once; exits 125 (skipped) when node/npm are missing or the registry cannot be reached.
# Usage: parquet_wasm_install SRC_DIR WORK_DIR
source "$(dirname "${BASH_SOURCE[0]}")/npm_oracle.bash"
parquet_wasm_install() {
  npm_oracle_install "$1/tests/data/parquet" "$2" parquet-wasm
}
