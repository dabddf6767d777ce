#!/usr/bin/env bash
# run-in-vm.sh: runs one test program inside a throwaway Linux VM whose root cgroup is a pure
# cgroup v2 hierarchy with every controller enabled, and passes back its stdout, stderr and
# exit status. See README.md in this folder.
#
# usage: run-in-vm.sh [OPTIONS] [--] BINARY [ARGS...]
#        run-in-vm.sh -K          (fetch the kernel if needed, print its path, exit)
#
#   -e NAME=VALUE   set NAME in the test's environment (repeatable)
#   -f SRC[:DST]    copy the host file or directory SRC into the guest at DST (default
#                   /vmtest/files/<name of SRC>); SRC cannot contain ':' (repeatable)
#   -t SECONDS      limit for the VM run, boot to power-off (default 300, $VMTEST_TIMEOUT)
#   -m MB           guest memory (default 1024, $VMTEST_MEM)
#   -c N            guest CPUs (default 2, $VMTEST_SMP)
#   -a ACCEL        tcg, kvm or auto (default auto, $VMTEST_ACCEL): auto is kvm when the CPU
#                   shows vmx/svm and /dev/kvm is usable, tcg (software emulation) otherwise
#   -k KERNEL       guest kernel image (default $VMTEST_KERNEL, else a cached one, see below)
#   -v              print the guest console (kernel log) to stderr afterwards ($VMTEST_VERBOSE=1)
#   -K              only make sure the kernel is there, and print its path
#
# BINARY (an executable, or a #!/bin/sh script for busybox sh) runs as root in the VM's root
# cgroup, in /vmtest, with stdin /dev/null and VMTEST=1 in its environment. A dynamic BINARY,
# or a dynamic executable given with -f, gets the libraries `ldd` lists copied in at their
# host paths. Its output is printed once the VM has stopped: stdout to stdout, stderr to
# stderr, then one "run-in-vm:" summary line to stderr.
#
# Exit status: the test's (128+S when signal S killed it), or 125 when the VM gave no status
# (boot failure, panic, timeout, a runner error); the guest console is then printed too.
#
# The kernel comes from the Debian package $VMTEST_KERNEL_PKG (linux-image-cloud-amd64): it is
# resolved to the versioned package with apt-cache, fetched with `apt-get download` and only
# its vmlinuz is kept, in $VMTEST_CACHE (~/.cache/corral-vm). Delete it to get a newer one.
#
# More environment: VMTEST_BUSYBOX (a static busybox, default /bin/busybox), VMTEST_CPU (qemu
# -cpu model), VMTEST_APPEND (more kernel command line), VMTEST_KEEP=1 (keep the work folder
# with the initramfs and the serial logs, and say where it is).
#
# Needs: qemu-system-x86_64, cpio, a static busybox, and for the first run apt
# (apt-get, apt-cache), dpkg-deb and tar. Root is not needed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prog=run-in-vm

# --- settings -------------------------------------------------------------------------------

timeout_s=${VMTEST_TIMEOUT:-300}
mem_mb=${VMTEST_MEM:-1024}
cpus=${VMTEST_SMP:-2}
accel=${VMTEST_ACCEL:-auto}
kernel=${VMTEST_KERNEL:-}
verbose=${VMTEST_VERBOSE:-0}
kernel_pkg=${VMTEST_KERNEL_PKG:-linux-image-cloud-amd64}
cache=${VMTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/corral-vm}
busybox=${VMTEST_BUSYBOX:-/bin/busybox}
kernel_only=0
env_settings=()  # NAME=VALUE
copies=()        # SRC[:DST]

die() {
	echo "$prog: $*" >&2
	exit 125
}
usage() {
	# The comment block at the top of this file, without the leading "# ".
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 125
}
need_number() {  # OPTION VALUE MINIMUM
	# shellcheck disable=SC2015  # either test failing is an error
	[[ $2 =~ ^[0-9]+$ ]] && ((10#$2 >= $3)) || die "-$1 wants a number of at least $3, got '$2'"
}

while getopts ":e:f:t:m:c:a:k:vKh" opt; do
	case $opt in
	e)
		[[ $OPTARG =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "-e wants NAME=VALUE, got '$OPTARG'"
		env_settings+=("$OPTARG")
		;;
	f) copies+=("$OPTARG") ;;
	t) timeout_s=$OPTARG ;;
	m) mem_mb=$OPTARG ;;
	c) cpus=$OPTARG ;;
	a) accel=$OPTARG ;;
	k) kernel=$OPTARG ;;
	v) verbose=1 ;;
	K) kernel_only=1 ;;
	h) usage ;;
	:) die "-$OPTARG needs a value" ;;
	*) die "unknown option -$OPTARG (-h for help)" ;;
	esac
done
shift $((OPTIND - 1))
need_number t "$timeout_s" 1
need_number m "$mem_mb" 128
need_number c "$cpus" 1

if [[ $accel == auto ]]; then
	# A /dev/kvm without vmx/svm can be a paravirtual (PVM) one that cannot run a stock guest
	# kernel at any usable speed; only real hardware virtualisation counts.
	accel=tcg
	if [[ -r /dev/kvm && -w /dev/kvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
		accel=kvm
	fi
fi
case $accel in
tcg | kvm) ;;
*) die "-a wants tcg, kvm or auto, got '$accel'" ;;
esac

# --- temporary files: everything this run creates goes away on exit --------------------------

temp_paths=()   # removed on exit
vm_pid=         # the timeout(1) process that runs the VM, while it runs
work=

# shellcheck disable=SC2317  # called through the trap
cleanup() {
	if [[ -n $vm_pid ]]; then
		# timeout(1) passes the signal on to the VM and exits when the VM has gone.
		kill -TERM "$vm_pid" 2>/dev/null || true
		wait "$vm_pid" 2>/dev/null || true
		vm_pid=
	fi
	local p
	for p in "${temp_paths[@]}"; do
		if [[ $p == "$work" && ${VMTEST_KEEP:-0} == 1 ]]; then
			echo "$prog: kept $work" >&2
		else
			rm -rf -- "$p"
		fi
	done
	temp_paths=()
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# VARIABLE PARENT: creates a private folder in PARENT, registered for removal, and stores its
# path in VARIABLE (not printed: a $(...) subshell could not register it). The name must not
# start with "corral": the integration tests' leak check (tests/support/leak_check.cc) takes
# new /tmp/corral* entries for its own leaks and removes them.
make_temp_dir() {
	local dir
	dir=$(mktemp -d "$2/run-in-vm.XXXXXX") || die "cannot create a folder in $2"
	temp_paths+=("$dir")
	printf -v "$1" '%s' "$dir"
}

# --- the guest kernel -----------------------------------------------------------------------

# Extracts ./boot/vmlinuz-* from the Debian package PACKAGE into the cache (nothing else: with
# an initramfs and 8250 serial ports the guest needs no module). The file is renamed into
# place, so a concurrent run never sees half a kernel.
fetch_kernel_deb() {
	local package=$1 pattern='./boot/vmlinuz-*' download unpack deb f
	if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
		die "no kernel in $cache, and apt-get/dpkg-deb are missing to fetch one"
	fi
	mkdir -p "$cache"
	make_temp_dir download "${TMPDIR:-/tmp}"
	# As root, apt downloads as its sandbox user _apt, which must be able to write here.
	if [[ $EUID == 0 ]] && id _apt >/dev/null 2>&1; then chown _apt "$download"; fi
	echo "$prog: fetching $package (first run; cached in $cache)" >&2
	(cd "$download" && apt-get download -q "$package" </dev/null >&2) ||
		die "apt-get download $package failed (has apt-get update run? is the mirror reachable?)"
	deb=$(printf '%s\n' "$download"/*.deb | head -n1)
	[[ -f $deb ]] || die "apt-get download $package gave no .deb"
	make_temp_dir unpack "$cache"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$unpack" --wildcards "$pattern" ||
		die "no $pattern in $deb"
	for f in "$unpack"/${pattern#./}; do
		[[ -f $f ]] || die "no $pattern in $deb"
		mv -f "$f" "$cache/"
	done
}

# The newest kernel in the cache, or nothing.
newest_cached_kernel() {
	local files=("$cache"/vmlinuz-*)
	[[ -e ${files[0]} ]] || return 0
	printf '%s\n' "${files[@]}" | sort -V | tail -n1
}

find_kernel() {
	[[ -n $kernel ]] && return
	kernel=$(newest_cached_kernel)
	[[ -n $kernel ]] && return
	# linux-image-cloud-amd64 is a metapackage; the versioned package it depends on (e.g.
	# linux-image-6.1.0-57-cloud-amd64) holds the kernel.
	local real
	command -v apt-cache >/dev/null || die "no kernel in $cache, and apt-cache is missing"
	# Not a metapackage, or unknown to apt: try the name itself (apt-get then says why not).
	real=$(apt-cache depends "$kernel_pkg" 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[^ <>]*\)$/\1/p' | head -n1) || real=
	fetch_kernel_deb "${real:-$kernel_pkg}"
	kernel=$(newest_cached_kernel)
	[[ -n $kernel ]] || die "fetching the kernel left no vmlinuz in $cache"
}

find_kernel
[[ -r $kernel ]] || die "cannot read the kernel image $kernel"
if ((kernel_only)); then
	printf '%s\n' "$kernel"
	exit 0
fi

(($# >= 1)) || usage
binary=$1
shift
[[ -f $binary && -x $binary ]] || die "not an executable file: $binary"

# --- tools ----------------------------------------------------------------------------------

for tool in qemu-system-x86_64 cpio timeout; do
	command -v "$tool" >/dev/null || die "$tool is not installed (scripts/install-deps.sh)"
done
# ldd prints no library path for a static program.
[[ -x $busybox ]] || die "no busybox at $busybox (apt-get install busybox-static)"
[[ -z $(ldd "$busybox" 2>/dev/null | grep -o '/[^ ]*' || true) ]] ||
	die "$busybox is dynamically linked; the guest needs a static one (busybox-static)"

# --- the initramfs --------------------------------------------------------------------------

make_temp_dir work "${TMPDIR:-/tmp}"
root=$work/root
mkdir -p "$root"/{bin,dev,etc,proc,root,sys,tmp,vmtest/bin,vmtest/files}
# Account files of a minimal system: `corral setup ids` checks its range against
# /etc/passwd, so that the guest's root-mode jails run on the reserved identity as on a host.
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\n' > "$root/etc/group"

# Puts host file SRC at guest path DST (absolute), creating the folders on the way.
put() {
	mkdir -p "$root$(dirname "$2")"
	# -a keeps modes and symlinks inside folders; -H follows SRC itself if it is a symlink.
	cp -a -H -- "$1" "$root$2" || die "cannot copy $1 into the guest"
}

# Copies the shared libraries a dynamic executable needs, at their host paths (symlinks
# resolved). Static executables and other files have none.
put_libraries() {
	local listing lib
	[[ -f $1 && -x $1 ]] || return 0
	listing=$(ldd "$1" 2>/dev/null) || return 0  # fails for static programs and scripts
	if [[ $listing == *'not found'* ]]; then
		die "$1 needs libraries this host lacks: $(grep 'not found' <<<"$listing" | tr -s ' \t\n' ' ')"
	fi
	# Lines are "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-... (0x...)".
	while read -r lib; do
		[[ -e $root$lib ]] || put "$(readlink -f "$lib")" "$lib"
	done < <(grep -o '/[^ ]*' <<<"$listing" || true)
}

put "$busybox" /bin/busybox
put "$here/guest-init.sh" /init
chmod 0755 "$root/init"
name=$(basename "$binary")
put "$binary" "/vmtest/bin/$name"
put_libraries "$binary"
for copy in "${copies[@]}"; do
	src=${copy%%:*}
	dst=/vmtest/files/$(basename "$src")
	[[ $copy == *:* ]] && dst=${copy#*:}
	[[ $dst == /* ]] || die "-f $copy: the guest path must be absolute"
	[[ -e $src ]] || die "-f $copy: no such file"
	put "$src" "$dst"
	put_libraries "$src"
done

# /vmtest/command: the environment and the command line, each word single-quoted for sh.
quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
{
	echo "# written by run-in-vm.sh"
	echo "export VMTEST=1"
	for setting in "${env_settings[@]}"; do
		echo "export ${setting%%=*}=$(quote "${setting#*=}")"
	done
	printf 'exec %s' "$(quote "/vmtest/bin/$name")"
	for arg in "$@"; do printf ' %s' "$(quote "$arg")"; done
	echo
} >"$root/vmtest/command"

# One header-only newc cpio entry (a device node or the trailer): /dev/console must be in the
# archive so that PID 1 has stdio, and writing the entry by hand needs no root for mknod.
# Fields: magic, then ino mode uid gid nlink mtime filesize devmajor devminor rdevmajor
# rdevminor namesize check as 8 hex digits each; name and NUL padded to a multiple of 4.
cpio_header() {  # NAME MODE RDEVMAJOR RDEVMINOR
	local name_size=$((${#1} + 1))
	printf '070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X' \
		0 "$2" 0 0 1 0 0 0 0 "$3" "$4" "$name_size" 0
	printf '%s\0' "$1"
	head -c $(((4 - (110 + name_size) % 4) % 4)) /dev/zero
}
# Not compressed: for the 222 MB archive of vm.corral_run_v2, gzip -1 took 3.3 s on the host
# and made the boot 1.4 s longer (decompression under TCG) than the plain archive. The kernel
# accepts archives one after another, so /dev/console follows cpio's own archive.
{
	(cd "$root" && find . -print0 | LC_ALL=C sort -z |
		cpio --null --create --format=newc --owner=0:0 --quiet)
	cpio_header dev/console $((8#020600)) 5 1  # character device 5:1, mode 0600
	cpio_header 'TRAILER!!!' 0 0 0
} >"$work/initramfs.cpio" || die "cannot write the initramfs"

# --- the run --------------------------------------------------------------------------------

for f in console stdout stderr status vm.log; do : >"$work/$f"; done
cmdline="rdinit=/init panic=-1 oops=panic quiet loglevel=4 ${VMTEST_APPEND:-}"
qemu_path() { printf '%s' "${1//,/,,}"; }  # a comma in a -chardev value is written twice

if [[ $accel == kvm ]]; then
	accel_args=(-accel kvm -cpu "${VMTEST_CPU:-host}")
else
	# Multi-threaded TCG: one host thread per guest CPU. "max" is every feature TCG emulates.
	# shellcheck disable=SC2054  # the comma belongs to the value
	accel_args=(-accel tcg,thread=multi -cpu "${VMTEST_CPU:-max}")
fi
# Serial ports in order: ttyS0 console, ttyS1 stdout, ttyS2 stderr, ttyS3 status.
serial_args=()
for f in console stdout stderr status; do
	serial_args+=(-chardev "file,id=$f,path=$(qemu_path "$work/$f")" -serial "chardev:$f")
done
# -no-reboot: the guest's reboot (panic=-1 turns a panic into one) ends qemu; so does poweroff.
vm=(qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot
	"${accel_args[@]}" -m "$mem_mb" -smp "$cpus"
	-kernel "$kernel" -initrd "$work/initramfs.cpio" -append "console=ttyS0 $cmdline"
	"${serial_args[@]}")

started=$(date +%s%N)
# timeout(1) ends the VM after -t seconds (SIGKILL 5 s later if need be); cleanup() signals
# it, by this PID, when we are interrupted.
timeout --kill-after=5 "$timeout_s" "${vm[@]}" </dev/null >"$work/vm.log" 2>&1 &
vm_pid=$!
vm_rc=0
wait "$vm_pid" || vm_rc=$?
vm_pid=
elapsed=$((($(date +%s%N) - started) / 1000000))

cat "$work/stdout"
cat "$work/stderr" >&2
status=$(sed -n 's/^exit \([0-9]\{1,3\}\)\r\{0,1\}$/\1/p' "$work/status" | tail -n1)
if [[ -z $status || $verbose == 1 ]]; then
	echo "----- $prog: guest console ($accel) -----" >&2
	tr -d '\r' <"$work/console" >&2
	if [[ -s $work/vm.log ]]; then
		echo "----- $prog: ${vm[0]##*/} output (exit $vm_rc) -----" >&2
		cat "$work/vm.log" >&2
	fi
	echo "-----" >&2
fi
seconds=$(printf '%d.%d' $((elapsed / 1000)) $((elapsed % 1000 / 100)))
if [[ -z $status ]]; then
	why="no status from the VM"
	((vm_rc == 124 || vm_rc == 137)) && why="timed out after $timeout_s s"
	echo "$prog: $name: $why ($accel, ${seconds} s); exit 125" >&2
	exit 125
fi
echo "$prog: $name: exit $status ($accel, ${cpus} CPUs, VM run ${seconds} s)" >&2
exit "$status"
