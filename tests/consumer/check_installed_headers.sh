#!/usr/bin/env bash
# check_installed_headers.sh PREFIX: is the installed public surface closed?
#
# Every header under PREFIX/include/braid/ may include only headers that are installed too:
# each #include "braid/..." (or <braid/...>) must name a file under PREFIX/include/, and each
# other quoted include a file beside the header. An installed header that includes an
# internal one (not installed) would compile in the tree and break for every user, so this
# fails, listing every offending line. Angle includes outside braid/ (<vector>, <torch/torch.h>)
# belong to the system or to a dependency and are not checked.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 PREFIX" >&2
  exit 2
fi
include_dir=$1/include
[[ -d $include_dir/braid ]] || { echo "check_installed_headers: no $include_dir/braid" >&2; exit 1; }

# #include "braid/x.h" or <braid/x.h>; any other quoted include (relative to the header).
braid_include='^[[:space:]]*#[[:space:]]*include[[:space:]]*["<](braid/[^">]+)[">]'
quoted_include='^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)"'
bad=0 headers=0
while IFS= read -r -d '' header; do
  headers=$((headers + 1))
  while IFS= read -r line; do
    number=${line%%:*}
    text=${line#*:}
    if [[ $text =~ $braid_include ]]; then
      target=$include_dir/${BASH_REMATCH[1]}
    elif [[ $text =~ $quoted_include ]]; then
      target=$(dirname "$header")/${BASH_REMATCH[1]}
    else
      continue
    fi
    if [[ ! -f $target ]]; then
      echo "${header#"$include_dir"/}:$number: includes a header that is not installed: ${text#"${text%%[![:space:]]*}"}" >&2
      bad=$((bad + 1))
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include' "$header" || true)
done < <(find "$include_dir/braid" -type f -print0)

if [[ $bad -gt 0 ]]; then
  echo "check_installed_headers: FAIL: $bad include(s) of headers that are not installed (make them public in their layer's PUBLIC_HEADERS, or stop including them)" >&2
  exit 1
fi
echo "check_installed_headers: $headers installed headers include only installed headers"
