#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# check_exports.sh LIB [NVIDIA_NCCL_H]
# check_exports.sh --list [NVIDIA_NCCL_H]   (print the expected names, one per line)
#
# Checks the dynamic symbol table of Monel's libnccl.so.2 against the API:
#   - the soname is libnccl.so.2;
#   - every function declared by NVIDIA's nccl.h (when installed) and by Monel's
#     nccl.h and monel.h is exported as a defined dynamic symbol, ncclX and its
#     pncclX twin alike;
#   - nothing else is exported, and no symbol carries a version;
#   - Monel's headers declare every function of NVIDIA's, each with its twin;
#   - the names of tests/abi/nccl-*.symbols (what NVIDIA's libraries export) are expected too.
# Function names are found by preprocessing the headers (CUDA headers are
# replaced by empty stand-ins, so no CUDA installation is needed).
# NVIDIA_NCCL_H defaults to $CUDA_HOME/include/nccl.h (CUDA_HOME defaults to
# /usr/local/cuda); when absent, Monel's headers alone give the list.
# MONEL_INCLUDE_DIR overrides the directory of Monel's headers.
# Prints every missing and extra name; exits 1 on any failure, 2 on bad usage.
set -u
export LC_ALL=C

usage() {
  echo "usage: $0 LIB [NVIDIA_NCCL_H]" >&2
  exit 2
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
lib=$1
list_only=0
[ "$lib" = "--list" ] && list_only=1
here=$(cd "$(dirname "$0")" && pwd)
monel_inc=${MONEL_INCLUDE_DIR:-$here/../../include}
nv_hdr=${2:-${CUDA_HOME:-/usr/local/cuda}/include/nccl.h}
cc=${CC:-cc}

[ $list_only -eq 1 ] || [ -f "$lib" ] || { echo "check_exports: $lib: no such file (build the library first)" >&2; exit 1; }
for tool in nm readelf "$cc"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "check_exports: needs '$tool' on PATH" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# Empty stand-ins for the CUDA headers: only declarations' names matter here.
mkdir -p "$tmp/stub"
for h in cuda_runtime.h cuda_fp16.h cuda_bf16.h cuda_fp8.h cuda.h; do : >"$tmp/stub/$h"; done

# Names of the functions a header declares, one per line, sorted.
list_functions() {
  local hdr=$1
  shift
  if ! "$cc" -E -P -x c -I"$tmp/stub" "$@" -I"$(dirname "$hdr")" "$hdr" >"$tmp/pp" 2>"$tmp/pp.err"; then
    echo "check_exports: cannot preprocess $hdr:" >&2
    cat "$tmp/pp.err" >&2
    return 1
  fi
  sed 's/"[^"]*"//g' "$tmp/pp" | grep -oE '(^|[^A-Za-z0-9_])p?nccl[A-Za-z0-9_]*[[:space:]]*\(' |
    sed -E 's/^[^A-Za-z0-9_]//; s/[[:space:]]*\($//' | sort -u
}

# 1. the expected names
list_functions "$monel_inc/monel.h" -DMONEL_NO_CUDA_HEADERS >"$tmp/monel" || exit 1
if [ ! -s "$tmp/monel" ]; then
  echo "check_exports: found no functions in $monel_inc/monel.h" >&2
  exit 1
fi
: >"$tmp/nvidia"
if [ -f "$nv_hdr" ]; then
  list_functions "$nv_hdr" >"$tmp/nvidia" || exit 1
  src="NVIDIA's $(basename "$nv_hdr") and Monel's headers"
else
  src="Monel's headers (no NVIDIA header at $nv_hdr)"
fi

# Monel's headers must declare NVIDIA's functions, and each with its twin.
missing_decl=$(comm -23 "$tmp/nvidia" "$tmp/monel")
if [ -n "$missing_decl" ]; then
  echo "declared by NVIDIA's header but not by Monel's:"
  echo "$missing_decl" | sed 's/^/  /'
  fail=1
fi
sed -E 's/^p//' "$tmp/monel" | sort -u >"$tmp/base"
no_twin=$(while read -r b; do
  grep -qx "$b" "$tmp/monel" || echo "$b"
  grep -qx "p$b" "$tmp/monel" || echo "p$b"
done <"$tmp/base")
if [ -n "$no_twin" ]; then
  echo "Monel's headers lack the declaration of:"
  echo "$no_twin" | sed 's/^/  /'
  fail=1
fi

# NVIDIA's libraries also export a few functions no header declares; the symbol lists kept in
# tests/abi (tools/abi/nccl-symbols) name them.
cat "$here"/nccl-*.symbols 2>/dev/null >"$tmp/listed" || :
cat "$tmp/nvidia" "$tmp/monel" "$tmp/listed" | sed -E 's/^p//' | sort -u >"$tmp/base"
sed 's/^/p/' "$tmp/base" | cat - "$tmp/base" | sort -u >"$tmp/expected"
if [ $list_only -eq 1 ]; then
  cat "$tmp/expected"
  exit $fail
fi

# 2. soname
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [ "$soname" != "libnccl.so.2" ]; then
  echo "soname: '${soname:-none}', expected 'libnccl.so.2'"
  fail=1
fi

# 3. what the library exports
# Versioned names read "name@@VERSION" or "name@VERSION": keep the bare name
# for the comparisons and the raw one for the version check.
nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3, $2, $1 }' | sort >"$tmp/raw"
grep '@' "$tmp/raw" | cut -d' ' -f1 >"$tmp/versioned"
sed -E 's/@[^ ]*//' "$tmp/raw" | sort >"$tmp/syms"
cut -d' ' -f1 "$tmp/syms" | sort -u >"$tmp/exported"

missing=$(comm -23 "$tmp/expected" "$tmp/exported")
if [ -n "$missing" ]; then
  echo "missing exports ($(echo "$missing" | wc -l)):"
  echo "$missing" | sed 's/^/  /'
  fail=1
fi
extra=$(comm -13 "$tmp/expected" "$tmp/exported")
if [ -n "$extra" ]; then
  echo "extra exports ($(echo "$extra" | wc -l)), only the API may be exported:"
  echo "$extra" | sed 's/^/  /'
  fail=1
fi
# Expected names must be functions (T, W or i), not data.
notfunc=$(join "$tmp/expected" "$tmp/syms" | awk '$2 !~ /^[TWi]$/ { print "  " $1 " (type " $2 ")" }')
if [ -n "$notfunc" ]; then
  echo "exported, but not as functions:"
  echo "$notfunc"
  fail=1
fi

# 4. no symbol versions
if [ -s "$tmp/versioned" ] || readelf -S -W "$lib" | grep -q '\.gnu\.version_d'; then
  echo "the library defines symbol versions; NCCL's symbols are unversioned:"
  echo "  $(wc -l <"$tmp/versioned") versioned symbols, e.g. $(head -3 "$tmp/versioned" | tr '\n' ' ')"
  readelf -V -W "$lib" | sed -n '/version_d/,/^$/p' | sed 's/^/  /'
  fail=1
fi

# Not a failure: ncclX should be a weak alias of pncclX (same address), so that
# an interposer can replace ncclX and still call pncclX.
notalias=$(while read -r b; do
  n=$(awk -v s="$b" '$1 == s { print $2 " " $3 }' "$tmp/syms")
  p=$(awk -v s="p$b" '$1 == s { print $2 " " $3 }' "$tmp/syms")
  [ -n "$n" ] && [ -n "$p" ] || continue
  [ "${n#W }" = "${p#T }" ] || echo "$b"
done <"$tmp/base")
if [ -n "$notalias" ]; then
  echo "note: not a weak alias of its pncclX twin: $(echo $notalias)"
fi

nexp=$(wc -l <"$tmp/expected")
nsym=$(wc -l <"$tmp/exported")
if [ $fail -eq 0 ]; then
  echo "check_exports: OK: $lib: soname libnccl.so.2, $nsym symbols exported = the $nexp names of $src, unversioned"
else
  echo "check_exports: FAILED for $lib ($nsym symbols exported, $nexp expected from $src)"
fi
exit $fail
