#!/usr/bin/env bash
# Runs every libFuzzer target of a -DCORRAL_FUZZ=ON build for SECONDS each, starting
# from the seed corpus in tests/fuzz/corpus/<target>/ (plus config.example.yaml and
# seccomp-profiles/*.json), and prints exec/s per target. Fails if any target crashes,
# leaks, times out or breaks an invariant; the input that did it is kept in
# BUILD_DIR/fuzz-artifacts/ and named in the output. The repository's corpus is never
# written: new inputs go to a temporary copy.
#   tests/fuzz/run_fuzzers.sh BUILD_DIR SECONDS [TARGET...]
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS [TARGET...]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for f in "$here"/fuzz_*.cc; do targets+=("$(basename "$f" .cc)"); done
fi

work=$(mktemp -d /tmp/fuzz-run-XXXXXX)
trap 'rm -rf "$work"' EXIT
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

failed=()
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/$t"
  if [ ! -x "$bin" ]; then
    echo "$t: not built ($bin); build with: cmake --build $build --target fuzz_all" >&2
    failed+=("$t")
    continue
  fi
  corpus="$work/$t"
  mkdir -p "$corpus"
  if [ -d "$here/corpus/$t" ]; then cp -r "$here/corpus/$t/." "$corpus/"; fi
  case "$t" in
    fuzz_config) cp "$source_dir/config.example.yaml" "$corpus/" ;;
    fuzz_seccomp_profile) cp "$source_dir"/seccomp-profiles/*.json "$corpus/" ;;
  esac
  log="$work/$t.log"
  rc=0
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$t-" "$corpus" >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  units=$(find "$corpus" -type f | wc -l)
  if [ "$rc" -ne 0 ]; then
    echo "$t: FAILED (exit $rc) after ${runs:-?} runs; last lines of its log:"
    grep -E 'ERROR|SUMMARY|invariant|Test unit written|^#[0-9]+ *(NEW|DONE)' "$log" | tail -5 || true
    tail -n 30 "$log"
    failed+=("$t")
  else
    echo "$t: ${rate:-?} exec/s, ${runs:-?} runs in ${seconds}s, corpus $units inputs"
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing failed: ${failed[*]} (inputs in $artifacts)" >&2
  exit 1
fi
echo "fuzzing: ${#targets[@]} targets, no crash"
