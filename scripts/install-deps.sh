#!/usr/bin/env bash
# Installs everything corral needs to build, test and benchmark on Debian 12.
# Run as root (or through sudo). Safe to run again.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: run as root (sudo $0)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
packages=(
  # build
  build-essential cmake pkg-config
  # compiler cache (.ci/run; optional for a one-off build)
  ccache
  # libraries (see README "Dependencies")
  libseccomp-dev libcap-dev libyaml-cpp-dev libspdlog-dev nlohmann-json3-dev libcli11-dev
  # fuzzing (tests/fuzz: libFuzzer, ASan and UBSan runtimes for clang)
  clang libclang-rt-14-dev
  # RE2: grep patterns in linear time (tools/providers/sandbox_search)
  libre2-dev
  # the daemon (server/): HTTP on Boost.Beast/Asio, sd_notify readiness; the aio provider's
  # HTTP client (libcurl)
  libboost-dev libsystemd-dev libcurl4-openssl-dev curl
  # the network allow-list's in-jail resolver (runtime/net): DNS messages with ldns
  libldns-dev
  # rootless mode: newuidmap/newgidmap map a user's /etc/subuid range into its jails
  uidmap
  # tests
  libgtest-dev libgmock-dev busybox-static iproute2 procps util-linux python3
  # the network allow-list end to end: pip through the proxy from a local index
  python3-pip
  # peers that `corral bench` compares against (skipped when absent)
  bubblewrap crun runc firejail
  # cgroup v2 tests in a throwaway VM (tests/vm/run-in-vm.sh; busybox-static above): the
  # guest kernel is fetched with apt-get download / apt-cache and unpacked with dpkg-deb + tar
  qemu-system-x86 cpio apt dpkg tar coreutils findutils libc-bin
)
apt-get update -q
apt-get install -y -q --no-install-recommends "${packages[@]}"
