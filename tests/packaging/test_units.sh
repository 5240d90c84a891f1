#!/usr/bin/env bash
# The systemd units of the build tree: `systemd-analyze verify` passes and
# `systemd-analyze security --offline=yes` scores hyperoffloadd.service at
# most 2.0 (systemd-analyze needs no systemd as PID 1 for either).  The
# service is configured here with ExecStart= naming the build tree's daemon
# (verify checks that the binary exists).
#   test_units.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
analyze=$(command -v systemd-analyze) || { echo "systemd-analyze not found"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed -e "s|@HO_SBINDIR@|$build/bin|" -e "s|@HO_SYSCONFDIR@|$src/systemd|" \
    "$src/systemd/hyperoffloadd.service.in" > "$dir/hyperoffloadd.service"
cp "$src/systemd/hyperoffloadd.socket" "$dir/"
# the config the unit names must be one the daemon accepts
mkdir -p "$dir/hyperoffload"
"$build/bin/hyperoffloadd" --check-config --config "$src/systemd/hyperoffloadd.conf"

# Issue 10 problems 4 and 7, as shipped: the admin group is not the
# socket's group (else every socket user would be an admin), sysusers
# creates it, and the service sets its descriptor limit.
sockgroup=$(sed -n 's/^SocketGroup=//p' "$src/systemd/hyperoffloadd.socket")
admingroup=$(sed -n 's/^admin_group *= *//p' "$src/systemd/hyperoffloadd.conf")
[ -n "$admingroup" ] && [ "$admingroup" != "$sockgroup" ] || {
  echo "shipped admin_group '$admingroup' is the socket group '$sockgroup'"; exit 1; }
grep -q "^g $admingroup " "$src/systemd/hyperoffload.sysusers" || {
  echo "sysusers does not create group $admingroup"; exit 1; }
grep -q '^LimitNOFILE=[0-9]' "$src/systemd/hyperoffloadd.service.in" || {
  echo "the service sets no LimitNOFILE="; exit 1; }
echo "groups: socket $sockgroup, admin $admingroup"

"$analyze" verify --man=no "$dir/hyperoffloadd.service" "$dir/hyperoffloadd.socket"
echo "verify: OK"
out=$("$analyze" security --offline=yes --threshold=20 "$dir/hyperoffloadd.service" 2>&1) || {
  echo "$out" | tail -n 30; echo "exposure above 2.0"; exit 1; }
score=$(echo "$out" | sed -n 's/.*Overall exposure level for hyperoffloadd.service: \([0-9.]*\).*/\1/p')
echo "exposure: $score"
awk -v s="$score" 'BEGIN { exit !(s != "" && s <= 2.0) }'
