#!/bin/bash
# run_corral_vmtest.sh VMTEST_DIR TEST_BINARY CORRAL CORRAL_CLI PROBE INIT [TEST_ARGS...]
#
# Runs the `corral run` integration tests (TEST_BINARY, dynamic) inside a throwaway VM with a
# pure cgroup v2 hierarchy, so that the v2 driver, clone3(CLONE_INTO_CGROUP) and the whole
# supervisor are exercised end to end; our development hosts are cgroup v1. CORRAL and the
# static PROBE are copied into the guest under /opt/corral-vm (the test binary is told so
# through $CORRAL_TEST_BINARY/$CORRAL_TEST_PROBE), with the shared libraries CORRAL needs,
# and CORRAL_CLI (corral-cli) and INIT (corral-init) next to CORRAL, where corral looks for
# them first. Skips (77) like run_vmtest.sh when qemu is missing.
set -euo pipefail
dir=$1 test_binary=$2 corral=$3 corral_cli=$4 probe=$5 init=$6
shift 6
# Not at their build paths: the guest mounts a tmpfs over /tmp, which would hide a build
# tree under /tmp.
files=(-f "$corral:/opt/corral-vm/corral" -f "$corral_cli:/opt/corral-vm/corral-cli"
  -f "$probe:/opt/corral-vm/corral_probe"
  -f "$init:/opt/corral-vm/corral-init")
for lib in $(ldd "$corral" "$corral_cli" | grep -oE '/[^ ]+'); do
  [[ -e $lib ]] && files+=(-f "$(readlink -f "$lib"):$lib")
done
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/run_vmtest.sh" "$dir" -t 500 -m 1536 -e CORRAL_TEST_BINARY=/opt/corral-vm/corral \
  -e CORRAL_TEST_PROBE=/opt/corral-vm/corral_probe "${files[@]}" "$test_binary" "$@"
