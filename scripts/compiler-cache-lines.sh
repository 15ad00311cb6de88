#!/bin/sh
# How many cache lines of its own data a compiler brings into its L2 per page fault: the
# figure behind kbuild's `fault_lines` (docs/workloads.md §1.2).
#
# For each C file: the page faults of `cc1` run natively (GNU time's %R: minor faults), and
# the misses of a simulated 2 MiB, 16-way L2 with 48 KiB L1D and 32 KiB L1I (Sapphire Rapids'
# per-core geometry) when cachegrind runs the same `cc1`. Lines per fault = L2 misses / faults.
#
# Usage: scripts/compiler-cache-lines.sh DIR FILE.c...   (run from anywhere; files relative to DIR)
# Environment: CFLAGS (default "-std=gnu11 -O2 -g"), CPPFLAGS (default empty), CC (default gcc).
# Needs gcc, valgrind and GNU time (/usr/bin/time). Slow: cachegrind runs cc1 about 50x slower.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 DIR FILE.c..." >&2; exit 2; }
dir=$1
shift
cd "$dir"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
CC=${CC:-gcc}
CFLAGS=${CFLAGS:--std=gnu11 -O2 -g}
CPPFLAGS=${CPPFLAGS:-}
printf '%-28s %10s %14s %12s %10s\n' file faults instructions l2_misses lines/fault
for f in "$@"; do
    # The cc1 command gcc would run, without the driver (whose faults are not the compiler's).
    # shellcheck disable=SC2086
    cmd=$($CC -### $CFLAGS $CPPFLAGS -S "$f" -o "$out/x.s" 2>&1 | grep '/cc1 ' | tr -d '"')
    [ -n "$cmd" ] || { echo "$f: no cc1 command from $CC -###" >&2; exit 1; }
    # shellcheck disable=SC2086
    faults=$(/usr/bin/time -f %R $cmd 2>&1 >/dev/null | tail -n 1)
    # shellcheck disable=SC2086
    valgrind --tool=cachegrind --cache-sim=yes --I1=32768,8,64 --D1=49152,12,64 \
        --LL=2097152,16,64 --cachegrind-out-file=/dev/null $cmd >/dev/null 2>"$out/cg"
    ir=$(grep -m1 'I *refs' "$out/cg" | tr -d ',' | awk '{print $NF}')
    ll=$(grep -m1 'LL misses' "$out/cg" | tr -d ',' | awk '{print $4}')
    printf '%-28s %10s %14s %12s %10.0f\n' "$f" "$faults" "$ir" "$ll" \
        "$(echo "$ll / $faults" | bc -l)"
done
