#!/bin/sh
# run_vmtest.sh BINARY [ARGS...]: runs a test binary in a throwaway cgroup v2 VM with the
# runner next to this script (run-in-vm.sh; its options, e.g. -t/-m/-e/-f, may come before
# BINARY). Exits 77 (ctest SKIP_RETURN_CODE) when qemu, cpio, a static busybox or the guest
# kernel is missing, unless CORRAL_TESTS_MUST_RUN=1, which makes that a failure. The binary
# runs with CORRAL_TESTS_MUST_RUN=1 inside the VM: there, every case must run.
# VMTEST_BUSYBOX, VMTEST_ACCEL, VMTEST_TIMEOUT, VMTEST_KEEP, ...: see run-in-vm.sh.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
runner=$here/run-in-vm.sh
skip() {
	if [ "${CORRAL_TESTS_MUST_RUN:-}" = 1 ]; then
		echo "run_vmtest: CORRAL_TESTS_MUST_RUN=1 forbids skipping: $*" >&2
		exit 1
	fi
	echo "run_vmtest: SKIP: $*" >&2
	exit 77
}
install_hint="(scripts/install-deps.sh, or apt-get install qemu-system-x86 busybox-static cpio)"
command -v qemu-system-x86_64 >/dev/null 2>&1 ||
	skip "qemu-system-x86_64 is not installed $install_hint"
command -v cpio >/dev/null 2>&1 || skip "cpio is not installed $install_hint"
[ -x "${VMTEST_BUSYBOX:-/bin/busybox}" ] ||
	skip "no static busybox at ${VMTEST_BUSYBOX:-/bin/busybox} $install_hint"
# Fetches the guest kernel on first use (apt-get download); offline, without it, we skip.
"$runner" -K >/dev/null || skip "no guest kernel (see the run-in-vm message above)"
exec "$runner" -e CORRAL_TESTS_MUST_RUN=1 "$@"
