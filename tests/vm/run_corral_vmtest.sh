#!/bin/bash
# run_corral_vmtest.sh TEST_BINARY CORRAL CORRAL_CLI PROBE INIT [TEST_ARGS...]
#
# Runs the `corral run` integration tests (TEST_BINARY, dynamic) inside a throwaway VM with a
# pure cgroup v2 hierarchy, so that the v2 driver, clone3(CLONE_INTO_CGROUP) and the whole
# supervisor are exercised end to end; our development hosts are cgroup v1. CORRAL and the
# static PROBE are copied into the guest under /opt/corral-vm (the test binary is told so
# through $CORRAL_TEST_BINARY/$CORRAL_TEST_PROBE), and CORRAL_CLI (corral-cli) and INIT
# (corral-init) next to CORRAL, where corral looks for them first; run-in-vm.sh adds the
# shared libraries of every dynamic one. util-linux's setpriv goes to /usr/bin/setpriv, for the
# tests that drop to an unprivileged uid (busybox's setpriv cannot change ids). Skips (77)
# like run_vmtest.sh when qemu is missing.
set -euo pipefail
test_binary=$1 corral=$2 corral_cli=$3 probe=$4 init=$5
shift 5
# Not at their build paths: the guest mounts a tmpfs over /tmp, which would hide a build
# tree under /tmp.
opt=/opt/corral-vm
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/run_vmtest.sh" -t 500 -m 3072 \
  -e CORRAL_TEST_BINARY=$opt/corral -e CORRAL_TEST_PROBE=$opt/corral_probe \
  -f "$corral:$opt/corral" -f "$corral_cli:$opt/corral-cli" \
  -f "$probe:$opt/corral_probe" -f "$init:$opt/corral-init" \
  -f /usr/bin/setpriv:/usr/bin/setpriv \
  "$test_binary" "$@"
