#!/usr/bin/env bash
# scripts/check-format.sh — checks that tessera's C++ sources (.cpp and .h) are as
# .clang-format says (`clang-format --dry-run --Werror`), and names the files that are
# not; `--fix` formats them in place instead. .ci/run calls it.
#
# Checked: every .cpp and .h that git tracks or would track (untracked files not
# ignored count too). Not checked: build*/ (outputs), export/templates/ (placeholders
# that `tessera export` fills in, not C++ until then), and the kernel sources (.cu,
# .cuh), which are not host C++. A raw string that holds shipped code is kept out of
# the formatter with `// clang-format off` / `// clang-format on` (export/cpp_runtime.cpp).
#
# CLANG_FORMAT names the binary (default clang-format; scripts/install-deps.sh installs
# it). Versions format differently: the tree is kept formatted by clang-format 14 (that
# of Debian 12 and Ubuntu 22.04), and another major version is reported before the check.
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0
case "${1:-}" in
  "") ;;
  --fix) fix=1 ;;
  *) echo "usage: scripts/check-format.sh [--fix]" >&2; exit 2 ;;
esac

cf="${CLANG_FORMAT:-clang-format}"
if ! command -v "$cf" >/dev/null; then
  echo "check-format: $cf not found (scripts/install-deps.sh installs clang-format)" >&2
  exit 1
fi
version="$("$cf" --version)"
major="$(sed -n 's/.*clang-format version \([0-9]*\).*/\1/p' <<<"$version")"
[ "$major" = 14 ] || echo "check-format: warning: $version; the tree is formatted with clang-format 14" >&2

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cpp' '*.h' |
                         grep -Ev '^(build[^/]*|export/templates)/' | sort -u)
else
  mapfile -t files < <(find . \( -path ./.git -o -path './build*' -o -path ./export/templates \) -prune -o \
                         -type f \( -name '*.cpp' -o -name '*.h' \) -print | sed 's|^\./||' | sort)
fi

if [ ${#files[@]} -eq 0 ]; then echo "check-format: no C++ files found" >&2; exit 1; fi
if [ "$fix" = 1 ]; then
  "$cf" -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi

bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue  # deleted but not yet staged
  "$cf" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -ne 0 ]; then
  printf '%s\n' "${bad[@]}"
  echo "check-format: ${#bad[@]} of ${#files[@]} C++ files differ from .clang-format ($version);" \
       "see one with \`$cf --dry-run FILE\`, fix all with scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "check-format: ${#files[@]} C++ files formatted"
