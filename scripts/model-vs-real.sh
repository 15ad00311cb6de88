#!/usr/bin/env bash
# The same workloads, with the same parameters, on the model of `lab-2cpu` and on the real
# runner (2 threads, 4096 MiB arena): one model run and three real runs each, one line per
# run with the headline metric and a few counters. docs/performance.md has a table of it.
#
#   cargo build --release -p pagealloc-lab && scripts/model-vs-real.sh
set -euo pipefail
P=${PAGEALLOC:-target/release/pagealloc}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() { # workload headline-metric args...
  local w=$1 h=$2; shift 2
  for r in model real real real; do
    if [ "$r" = model ]; then extra=(--machine lab-2cpu); else extra=(--runner real --memory-mib 4096); fi
    if [ "$w" = thpfioscale ]; then extra+=(--cpus 3); fi
    if ! "$P" run "$w" "${extra[@]}" "$@" --no-save --json >"$out" 2>/dev/null; then
      echo "$w $r: failed"; continue
    fi
    python3 - "$w" "$r" "$h" "$out" <<'PY'
import json, sys
w, r, h, path = sys.argv[1:5]
d = json.load(open(path))
m = d["metrics"]
g = lambda k: m[k]["value"] if k in m else float("nan")
print(f"{w:26s} {r:5s} {h}={g(h):.4g} {m[h]['unit']} elapsed_s={g('elapsed_s'):.3f} "
      f"calls={d['allocator_calls']} free_high={g('free_high'):.0f} alloc_zone={g('alloc_zone'):.0f} "
      f"pcp_peak_mib={g('pcp_peak_mib'):.2f} zone_lock_acquire={g('zone_lock_acquire'):.0f}")
PY
  done
}
run trunc elapsed --quick
run page-frag-rx throughput --param rx_cpus=1 --param tx_cpus=1 --scale 0.2
run netperf-tcp throughput --scale 0.2
run netperf-sctp-stream-many score --param pairs=1 --scale 0.2
run lmbench-unix score --param pairs=1 --scale 0.2
run page-fault1 ops_per_s --param processes=2 --scale 0.1
run kbuild build_time --param mem_node=-1 --param parallel=2 --scale 0.02
run thpfioscale fault_huge_us --param fio_threads=1 --scale 0.1
