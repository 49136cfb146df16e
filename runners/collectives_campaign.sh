#!/usr/bin/env bash
# Every collective of nccl-tests measured by runners/allreduce_bench.py --coll NAME, out of place and
# in place per size (--place both), each result checked exactly. Writes JSON Lines under OUT:
#   <mode>_<coll>_<timing>.jsonl     one file per collective (all_reduce all_gather reduce_scatter
#                                     broadcast reduce alltoall sendrecv) and timing
#
#   bash runners/collectives_campaign.sh OUT two-gpus   # 2 GPUs, one rank each (NVLink): 8 B - 1 GiB,
#                                                       # CUDA graphs and eager, nccl-tests' rotation
#   bash runners/collectives_campaign.sh OUT one-gpu    # 1 GPU: one rank, 8 B - 1 GiB in CUDA graphs
#                                                       # (sendrecv needs 2 ranks), then 2 ranks sharing
#                                                       # GPU 0 as 2 emulated nodes (sockets over lo), eager
# Environment: NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 are forced;
# PYTHON (default python3) is the interpreter that has torch. Run from the repository root.
set -euo pipefail
out=${1:?usage: collectives_campaign.sh OUT two-gpus|one-gpu}
mode=${2:?usage: collectives_campaign.sh OUT two-gpus|one-gpu}
py=${PYTHON:-python3}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
colls="all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv"
mkdir -p "$out"
bench() { # bench NPROC FILE ARGS...: one collective's sweep; a failure is logged, the others still run
  local n=$1 file=$2; shift 2
  "$py" -m torch.distributed.run --standalone --nproc-per-node="$n" runners/allreduce_bench.py "$@" \
      --place both --timeout 300 --out "$out/$file" || echo "FAIL $file" >&2
}
case "$mode" in
  two-gpus)
    for c in $colls; do
      bench 2 "2gpu_${c}_graph.jsonl" --coll "$c" -b 8 -e 1G -f 2 -w 5 -n 40 --timing graph --graph-calls 20 --rotate
      bench 2 "2gpu_${c}_eager.jsonl" --coll "$c" -b 8 -e 1G -f 4 -w 5 -n 20 --timing eager --rotate
    done ;;
  one-gpu)
    for c in $colls; do
      [ "$c" = sendrecv ] || bench 1 "1gpu_${c}_graph.jsonl" --coll "$c" -b 8 -e 1G -f 4 -w 5 -n 20 \
          --timing graph --graph-calls 10
    done
    export NCCL_SOCKET_IFNAME=lo
    for c in $colls; do
      bench 2 "emu2_${c}_eager.jsonl" --coll "$c" --sizes 8,1K,64K,1M,16M,64M -w 2 -n 5 --emulate-nodes 2
    done ;;
  *) echo "collectives_campaign.sh: mode must be two-gpus or one-gpu, got '$mode'" >&2; exit 2 ;;
esac
