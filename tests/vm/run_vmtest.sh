#!/bin/sh
# run_vmtest.sh VMTEST_DIR BINARY [ARGS...]: runs a static test binary in a VM with
# VMTEST_DIR/run-in-vm.sh. Exits 77 (ctest SKIP_RETURN_CODE) when qemu or the runner is
# missing, unless CORRAL_TESTS_MUST_RUN=1, which makes that a failure. The binary runs with
# CORRAL_TESTS_MUST_RUN=1 inside the VM: there, every case must run.
set -eu
dir=$1
shift
skip() {
	if [ "${CORRAL_TESTS_MUST_RUN:-}" = 1 ]; then
		echo "run_vmtest: CORRAL_TESTS_MUST_RUN=1 forbids skipping: $*" >&2
		exit 1
	fi
	echo "run_vmtest: SKIP: $*" >&2
	exit 77
}
[ -x "$dir/run-in-vm.sh" ] || skip "no VM runner at $dir/run-in-vm.sh (set CORRAL_VMTEST_DIR)"
accel=${VMTEST_ACCEL:-auto}
if [ "$accel" != uml ] && ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
	skip "qemu-system-x86_64 not installed (apt-get install qemu-system-x86 busybox-static cpio)"
fi
command -v cpio >/dev/null 2>&1 || skip "cpio not installed"
[ -x "${VMTEST_BUSYBOX:-/bin/busybox}" ] || skip "static busybox not installed (busybox-static)"
exec "$dir/run-in-vm.sh" -e CORRAL_TESTS_MUST_RUN=1 "$@"
