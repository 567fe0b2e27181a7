#!/usr/bin/env bash
# Checks that every C++ and CUDA source git tracks is as clang-format (.clang-format) writes it;
# names each file that is not. Exits 77 (skipped) without clang-format 14 or outside a git
# checkout: other versions format some constructs differently.
#   scripts/check-format.sh            (from anywhere in the repository)
#   clang-format -i FILE               formats a file
set -uo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null 2>&1 || { echo "no clang-format"; exit 77; }
version=$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
[ "$version" = 14 ] || { echo "clang-format 14 needed (found ${version:-an unknown version})"; exit 77; }
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "not a git checkout"; exit 77; }
unformatted=()
while IFS= read -r -d '' file; do
  clang-format --dry-run --Werror "$file" >/dev/null 2>&1 || unformatted+=("$file")
done < <(git ls-files -z '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h')
if ((${#unformatted[@]})); then
  echo "not formatted (clang-format -i FILE): ${unformatted[*]}"
  exit 1
fi
echo "every C++ and CUDA source is formatted"
