#!/bin/busybox sh
# PID 1 of the test VM: run-in-vm.sh puts this file into the initramfs as /init.
#
# It prepares a minimal Linux (proc, sys, dev, tmpfs, a pure cgroup v2 hierarchy with every
# controller enabled in the root), runs /vmtest/command (written by run-in-vm.sh: exports
# plus an exec of the test) and powers the VM off. The serial ports are the channels back to
# the host, one per stream, so that kernel messages never end up in the test's output:
#
#   ttyS0  kernel log and the "guest-init:" lines below   (run-in-vm.sh: console log)
#   ttyS1  the test's stdout                              (host stdout)
#   ttyS2  the test's stderr                              (host stderr)
#   ttyS3  "exit N", N the test's status (128+S if signal S killed it)
#
# If this script dies before the last step the host gets no status and reports 125.

bb=/bin/busybox
$bb mkdir -p /proc /sys /dev /tmp /run /root /sbin /usr/bin /usr/sbin
$bb mount -t proc proc /proc
$bb mount -t sysfs sysfs /sys
# An initramfs gets no devtmpfs automatically; /dev/console (in the archive) is all we had.
$bb mount -t devtmpfs devtmpfs /dev
# One symlink per applet (sh, mount, ip, stty, ...) under /bin, /sbin, /usr/bin, /usr/sbin.
$bb --install -s
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
exec </dev/null >/dev/console 2>&1

say() { echo "guest-init: $*"; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }

mkdir -p /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run

# cgroup v2 only: no v1 hierarchy is ever mounted here, so every controller the kernel has
# binds to v2. The options are the ones systemd uses for its unified mount.
mkdir -p /sys/fs/cgroup
if ! mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup; then
	mount -t cgroup2 cgroup2 /sys/fs/cgroup || say "cannot mount cgroup2"
fi
for controller in $(cat /sys/fs/cgroup/cgroup.controllers); do
	echo "+$controller" >/sys/fs/cgroup/cgroup.subtree_control ||
		say "cannot enable the $controller controller"
done
say "cgroup2 root: controllers '$(cat /sys/fs/cgroup/cgroup.controllers)'," \
	"subtree_control '$(cat /sys/fs/cgroup/cgroup.subtree_control)'"

hostname corral-vm
ip link set lo up || say "cannot bring lo up"

# Raw mode: no \n -> \r\n translation, no echo, every byte passes unchanged.
for port in 1 2 3; do
	stty -F /dev/ttyS$port raw -echo || say "cannot set ttyS$port raw"
done

cd /vmtest || say "no /vmtest"
say "test starts at uptime $(uptime_s) s"
# As a background job plus wait, so that this shell never writes a note such as
# "Segmentation fault" into the test's stderr when the test dies from a signal.
sh /vmtest/command </dev/null >/dev/ttyS1 2>/dev/ttyS2 &
wait $!
status=$?
say "test exited with status $status at uptime $(uptime_s) s"
echo "exit $status" >/dev/ttyS3

sync
poweroff -f
# Not reached unless the power-off failed; with panic=-1 a dying PID 1 still ends the VM.
sleep 5
exit 1
