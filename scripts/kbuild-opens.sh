#!/bin/sh
# How many files each process of a kernel compile job opens: the figures behind kbuild's
# `opens_compiler` and `opens_helper` (docs/workloads.md §1.4). Each open, failed ones
# included, takes a `struct file` in Linux 6.6, freed through RCU.
#
# For each object: `make OBJ` under strace (openat and execve, with timestamps), then per
# program the process that opened most (make's own compiler probes are small cc1 runs of
# their own): its opens, how many failed, and for cc1 by what share of its life it had made
# half, 90 % and 99 % of them; for sh, the mean over make's shells.
#
# Usage: scripts/kbuild-opens.sh KERNEL_TREE OBJ.o...   (a configured tree: `make defconfig
# && make prepare` done; objects relative to it, e.g. kernel/fork.o)
# Needs strace, awk and the kernel's build dependencies (gcc, make, flex, bison, bc,
# libelf and libssl headers). Each object is rebuilt.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 KERNEL_TREE OBJ.o..." >&2; exit 2; }
tree=$1
shift
cd "$tree"
trace=$(mktemp)
trap 'rm -f "$trace"' EXIT
printf '%-22s %-8s %7s %7s %s\n' object program opens failed "cc1: share of its life by 50/90/99 % of its opens"
for obj in "$@"; do
    rm -f "$obj"
    strace -f -qq -ttt -e trace=openat,open,openat2,execve,exit_group -o "$trace" \
        make -s "$obj" >/dev/null 2>&1 || { echo "$obj: make failed" >&2; exit 1; }
    awk -v obj="$obj" '
        # Lines: PID TIME CALL(...) = RESULT
        $3 ~ /^execve\(/ && / = 0$/ {
            prog = $3; sub(/^execve\("/, "", prog); sub(/".*/, "", prog); n = split(prog, p, "/")
            exe[$1] = p[n]; start[$1] = $2
        }
        $3 ~ /^exit_group\(/ { end[$1] = $2 }
        $3 ~ /^open(at|at2)?\(/ {
            opens[$1]++; t[$1, opens[$1]] = $2
            if ($0 ~ / = -1 /) failed[$1]++
        }
        END {
            split("cc1 gcc as fixdep", want, " ")
            for (w = 1; w <= 4; w++) {
                best = ""
                for (pid in opens) if (exe[pid] == want[w] && (best == "" || opens[pid] > opens[best])) best = pid
                if (best == "") continue
                share = ""
                if (want[w] == "cc1" && (best in end)) {
                    life = end[best] - start[best]
                    split("0.5 0.9 0.99", q, " ")
                    for (k = 1; k <= 3; k++) {
                        i = int(opens[best] * q[k]); if (i < 1) i = 1
                        share = share sprintf("%s%.0f %%", (k > 1 ? ", " : ""), 100 * (t[best, i] - start[best]) / life)
                    }
                }
                printf "%-22s %-8s %7d %7d %s\n", obj, want[w], opens[best], failed[best] + 0, share
            }
            # make runs many short shells: their mean.
            for (pid in opens) if (exe[pid] == "sh") { shells++; sh_opens += opens[pid]; sh_failed += failed[pid] }
            if (shells) printf "%-22s %-8s %7.1f %7.1f (mean of %d shells)\n", obj, "sh", sh_opens / shells, sh_failed / shells, shells
        }' "$trace"
done
