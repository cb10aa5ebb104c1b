#!/usr/bin/env bash
# A volume shared for writing across accounts (issue 40): on a root workspace each owner's commands run as
# their own unix account, so a folder alice's run makes in her volume is air-u-alice's. bob, granted
# WRITE_VOLUME, must still write into it (a new file, her file, a new folder), and into a folder made by an
# upload: the volume's folder carries a default ACL that opens what is made inside to every account whose
# runs mount it (core/sandbox share_volume_folder). Without root every command runs as one account and
# there is nothing to show: skipped.
source "$(dirname "$0")/lib/common.bash"
command -v bwrap >/dev/null || { echo "skip: bwrap (Debian package bubblewrap) not installed"; exit 125; }
[ "$(id -u)" = 0 ] || { echo "skip: not root: every run's command runs as this account"; exit 125; }

"$AIR" list > /dev/null  # starts the embedded workspace; this shell's token is its bootstrap admin's
"$AIR" server status | grep -q "isolation: local backend: every run's commands in a sandbox" ||
  { echo "skip: this machine cannot build the run sandbox"; exit 125; }
URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
source "$(dirname "$0")/lib/tenant_attack.bash"
tenant_users
as "$ALICE" fs mkdir dbfs:/Volumes/main/alice/shared/uploads
as "$ALICE" volumes grant main.alice.shared bob READ_VOLUME > /dev/null
as "$ALICE" volumes grant main.alice.shared bob WRITE_VOLUME > /dev/null

workload() {  # workload NAME COMMAND
  cat > "$E2E_TMP/$1.yaml" <<YAML
experiment_name: $1
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: |
$(printf '%s\n' "$2" | sed 's/^/  /')
max_retries: 0
YAML
}
# alice's run makes a checkpoint folder with her usual umask (folders 0755, files 0644 without the ACL).
workload alice 'umask 022
mkdir -p /Volumes/main/alice/shared/ckpt/step1
echo alice > /Volumes/main/alice/shared/ckpt/step1/a.txt
echo "alice wrote as $(id -un)"'
A=$(as "$ALICE" -o json run -f "$E2E_TMP/alice.yaml" | json_get - 'd["run_id"]')
wait_state "$A" SUCCEEDED 60
as "$ALICE" logs "$A" --no-follow | grep -q "alice wrote as air-u-alice" || fail "alice's run: $(as "$ALICE" logs "$A" --no-follow)"
V="$AIR_HOME/volumes/main/alice/shared"
[ "$(stat -c %U "$V/ckpt/step1")" = air-u-alice ] || fail "the checkpoint folder is $(stat -c %U "$V/ckpt/step1")'s"

workload bob 'umask 077
cd /Volumes/main/alice/shared
echo bob > ckpt/step1/b.txt && echo "NEW FILE ok"
echo bob >> ckpt/step1/a.txt && echo "HER FILE ok"
mkdir ckpt/step2 && echo "NEW FOLDER ok"
echo bob > uploads/b.txt && echo "UPLOAD FOLDER ok"
echo "bob wrote as $(id -un)"'
B=$(as "$BOB" -o json run -f "$E2E_TMP/bob.yaml" | json_get - 'd["run_id"]')
wait_state "$B" SUCCEEDED 60
as "$BOB" logs "$B" --no-follow > "$E2E_TMP/bob.log"
grep -q "bob wrote as air-u-bob" "$E2E_TMP/bob.log" || fail "bob's run: $(cat "$E2E_TMP/bob.log")"
for what in "NEW FILE" "HER FILE" "NEW FOLDER" "UPLOAD FOLDER"; do
  grep -q "^$what ok" "$E2E_TMP/bob.log" || fail "bob (WRITE_VOLUME) could not write: $what; his log: $(cat "$E2E_TMP/bob.log")"
done
[ "$(cat "$V/ckpt/step1/a.txt")" = "$(printf 'alice\nbob')" ] || fail "her file: $(cat "$V/ckpt/step1/a.txt")"
[ "$(stat -c %U "$V/ckpt/step1/b.txt")" = air-u-bob ] || fail "bob's file is $(stat -c %U "$V/ckpt/step1/b.txt")'s"
# And alice, in turn, writes into what bob made (umask 077 in his command: the ACL decides, not the umask).
workload alice2 'echo alice > /Volumes/main/alice/shared/ckpt/step2/c.txt && echo "BACK ok"
echo alice >> /Volumes/main/alice/shared/ckpt/step1/b.txt && echo "HIS FILE ok"'
A2=$(as "$ALICE" -o json run -f "$E2E_TMP/alice2.yaml" | json_get - 'd["run_id"]')
wait_state "$A2" SUCCEEDED 60
as "$ALICE" logs "$A2" --no-follow | grep -q "^BACK ok" || fail "alice cannot write into bob's folder: $(as "$ALICE" logs "$A2" --no-follow)"
as "$ALICE" logs "$A2" --no-follow | grep -q "^HIS FILE ok" || fail "alice cannot write bob's file"
# The Files API reads all of it back for either of them.
as "$BOB" fs cp dbfs:/Volumes/main/alice/shared/ckpt/step2/c.txt "$E2E_TMP/c.txt" 2> /dev/null || fail "bob cannot download it"
grep -q alice "$E2E_TMP/c.txt" || fail "bob downloaded: $(cat "$E2E_TMP/c.txt")"
echo "tenant_volume_write: ok"
