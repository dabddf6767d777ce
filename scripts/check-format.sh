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
bad=()
for f in "${files[@]}"; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -gt 0 ]; then
  printf '%s\n' "${bad[@]}" >&2
  echo "check-format.sh: ${#bad[@]} of ${#files[@]} files differ from .clang-format; run scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "check-format.sh: ${#files[@]} files follow .clang-format"
