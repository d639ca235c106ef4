#!/bin/bash
# helper n24c's device call 6 (issue 24; benchmarks/results/native_gemm_wave2.md): run from the repository root of the
# device machine with .devcarry/n24c.tgz (this branch: src benchmarks tests tools, this script at its root, COMMIT)
# carried; tests, a panel-padding sweep, then the final tables with the chosen padding
set -o pipefail
export PYTHONUNBUFFERED=1
W=$PWD
mkdir -p /tmp/ll /tmp/site /tmp/w
tar xJf .devcarry/llvmlite312.txz -C /tmp/ll
python3 -m pip install -q --no-deps --target /tmp/site .devcarry/whl-lead/*.whl 2>&1 | tail -1
tar xzf .devcarry/n24c.tgz -C /tmp/w && ln -s $W/tests/data /tmp/w/tests/data && cd /tmp/w
export PYTHONPATH=/tmp/w/src:/tmp/ll:/tmp/site
U="env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS"
{ cat COMMIT; date -u; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|L1d|L2|L3|MHz"
  echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1) defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>&1)"
  grep -i huge /proc/meminfo; env | grep -iE "openblas|omp_|mkl"
  python3 -c "import numpy, torch, llvmlite; print('numpy', numpy.__version__, 'torch', torch.__version__, 'llvmlite', llvmlite.__version__)"; } 2>&1 | tee $OUT/machine.txt
echo "== tests $(date -u +%T)"; timeout 50 python3 -m pytest -n 8 -q -p no:randomly -p no:cacheprovider tests/native tests/xmx/test_int_on_amx.py 2>&1 | tee $OUT/tests.log | tail -3
echo "== pad sweep 4096 $(date -u +%T)"; timeout 80 python3 benchmarks/bench_native_gemm.py --sizes 4096 --threads 1,16 --reps 5 --sweep --variants "pad0;pad64;pad256;pad1024,db;zeros" --md $OUT/ng_sweep4096.md 2>&1 | tee $OUT/sweep4096.log | grep -E "sweep|ratio|DIFFER|rror"
P=$(python3 - $OUT/sweep4096.log <<'PY'
import math, re, sys
cells = [dict((k, float(v)) for k, v in re.findall(r"(\S+) ([0-9.]+)(?:,|$)", l.split("sweep TOP/s:")[1]))
         for l in open(sys.argv[1]) if "sweep TOP/s:" in l]
score = {}
for name, pad in (("ours", 1024), ("pad0", 0), ("pad64", 64), ("pad256", 256)):
    got = [c[name] for c in cells if c.get(name)]
    if len(got) == len(cells) and cells:
        score[pad] = math.exp(sum(map(math.log, got)) / len(got))
print(max(score, key=lambda p: (score[p], p == 1024)) if score else 1024)
print(score, file=sys.stderr)
PY
)
echo "chosen pad: $P" | tee $OUT/pad.txt
echo "== 1024 bf16/int8 1 thread variants $(date -u +%T)"; timeout 20 python3 benchmarks/bench_native_gemm.py --sizes 1024 --threads 1 --reps 9 --sweep --pad $P --variants "pad0;pad1024,db;kb0,n;kb8,m,col;zeros;overhead" --md $OUT/ng_sweep1024.md 2>&1 | grep -E "sweep|ratio|DIFFER|rror"
echo "== native gemm $(date -u +%T)"; timeout 100 python3 benchmarks/bench_native_gemm.py --sizes 1024,4096 --reps 7 --peak --pad $P --md $OUT/ng16.md 2>&1 | tee $OUT/ng16.log | grep -E "ratio|Tile|rror"
echo "== 2 CPUs amx $(date -u +%T)"; timeout 30 taskset -c 0,1 $U python3 benchmarks/bench_host_speed.py --only "amx" --rounds 11 --md $OUT/hs2.md 2>&1 | grep -E "^\| amx|^- |rror"
date -u
