#!/usr/bin/env bash
# Checks that every C and C++ file in git follows .clang-format (clang-format 14, Debian 12's).
#   scripts/check-format.sh         list the files that differ; exit 1 if any
#   scripts/check-format.sh --fix   reformat them in place
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "check-format.sh: clang-format is not installed (apt-get install clang-format)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.c')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
# Fifty files per clang-format, one per core at a time; a file that differs is named in
# its "FILE:LINE:COL: error: code should be clang-formatted" lines.
status=0
out=$(printf '%s\0' "${files[@]}" |
  xargs -0 -r -n 50 -P "$(nproc)" clang-format --dry-run -Werror 2>&1) || status=$?
mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' \
  <<<"$out" | sort -u)
if [ "$status" -ne 0 ] && [ ${#bad[@]} -eq 0 ]; then
  printf '%s\n' "$out" >&2
  echo "check-format.sh: clang-format failed (exit $status) without naming a file" >&2
  exit 1
fi
if [ ${#bad[@]} -gt 0 ]; then
  printf '%s\n' "${bad[@]}" >&2
  echo "check-format.sh: ${#bad[@]} of ${#files[@]} files differ from .clang-format; run scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "check-format.sh: ${#files[@]} files follow .clang-format"
