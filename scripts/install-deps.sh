#!/usr/bin/env bash
# Installs what corral needs on Debian 12. Run as root (or through sudo). Safe to run again.
#   scripts/install-deps.sh           build and run corral (README command 1)
#   scripts/install-deps.sh --tests   also everything the tests, fuzzers, the cgroup v2 VM
#                                     and `corral bench`'s peers need (README command 2, CI)
set -euo pipefail
usage() { echo "usage: $0 [--tests]" >&2; exit 2; }
with_tests=false
for arg in "$@"; do
  case "$arg" in
    --tests) with_tests=true ;;
    -h|--help) usage ;;
    *) echo "install-deps.sh: unknown option '$arg'" >&2; usage ;;
  esac
done
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: run as root (sudo $0 $*)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
packages=(
  # build
  build-essential cmake pkg-config
  # libraries (docs/development.md, "Dependencies")
  libseccomp-dev libcap-dev libyaml-cpp-dev libspdlog-dev nlohmann-json3-dev libcli11-dev
  # RE2: grep patterns in linear time (tools/providers/sandbox_search)
  libre2-dev
  # the daemon (server/): HTTP on Boost.Beast/Asio, sd_notify readiness; the aio provider's
  # HTTP client (libcurl)
  libboost-dev libsystemd-dev libcurl4-openssl-dev curl
  # the network allow-list's in-jail resolver (runtime/netproxy): DNS messages with ldns
  libldns-dev
  # GoogleTest: configuring the tree finds it even when only the programs are built
  libgtest-dev libgmock-dev
  # rootless mode: newuidmap/newgidmap map a user's /etc/subuid range into its jails
  uidmap
  # `corral code run`'s runner, and what the sandbox sees as python3
  python3
)
test_packages=(
  # compiler cache (.ci/run) and the format check (scripts/check-format.sh)
  ccache clang-format
  # fuzzing (tests/fuzz: libFuzzer, ASan and UBSan runtimes for clang)
  clang libclang-rt-14-dev
  # tests
  busybox-static iproute2 procps util-linux
  # the network allow-list end to end: pip through the proxy from a local index
  python3-pip
  # container mode (runtime/oci) and the peers that `corral bench` compares against
  bubblewrap crun runc firejail
  # corral-runc (runtime/oci) driven by its real callers: containerd's runc shim (ctr and
  # the CRI plugin, driven over gRPC by tests/integration/cri/cri_test.py) and podman
  containerd podman python3-grpcio python3-protobuf protobuf-compiler containernetworking-plugins
  # cgroup v2 tests in a throwaway VM (tests/vm/run-in-vm.sh; busybox-static above): the
  # guest kernel is fetched with apt-get download / apt-cache and unpacked with dpkg-deb + tar
  qemu-system-x86 cpio apt dpkg tar coreutils findutils libc-bin
  # the Kubernetes manifests' check (tests/deploy/check_kubernetes_manifests.py)
  python3-jsonschema python3-yaml
)
if $with_tests; then packages+=("${test_packages[@]}"); fi
apt-get update -q
apt-get install -y -q --no-install-recommends "${packages[@]}"
