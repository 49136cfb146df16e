#!/usr/bin/env bash
# collsim's executed schedules beside NCCL's own all_reduce, eager and CUDA-graph timing, from one
# host's torchrun processes. Writes JSON Lines (nccl-tests vocabulary) under OUT:
#   exec_<timing>_ring_c<C>.jsonl    collsim ring on C channels (1 2 4 8 16), NCCL's all_reduce alternated
#   exec_<timing>_tree.jsonl         collsim tree (NCCL's double binary tree), likewise
#   exec_<timing>_hand.jsonl         a hand-written schedule file (SCHEDULE), likewise
#   nccl_<timing>_<Algo>_<Proto>.jsonl  NCCL's all_reduce with NCCL_ALGO/NCCL_PROTO forced (runners/allreduce_bench.py)
#
#   bash runners/schedule_campaign.sh OUT two-gpus     # 2 GPUs, one rank each (NVLink): 8 B - 1 GiB
#   bash runners/schedule_campaign.sh OUT one-gpu      # 2 ranks share GPU 0 as 2 emulated nodes (NCCL_HOSTID,
#                                                      # sockets over lo): real code paths, 8 B - 64 MiB
# Environment: NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 are forced;
# PYTHON (default python3) is the interpreter that has torch; SCHEDULE (default
# data/h200x1/reduce_broadcast_2r_16M.json) a 2-rank schedule file; TIMINGS (default "eager graph").
# Run from the repository root.
set -euo pipefail
out=${1:?usage: schedule_campaign.sh OUT two-gpus|one-gpu}
mode=${2:?usage: schedule_campaign.sh OUT two-gpus|one-gpu}
py=${PYTHON:-python3}
schedule=${SCHEDULE:-data/h200x1/reduce_broadcast_2r_16M.json}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
case "$mode" in
  two-gpus) emulate=(); sizes="-b 8 -e 1G -f 4"; iters="-w 5 -n 20" ;;
  one-gpu) emulate=(--emulate-nodes 2); export NCCL_SOCKET_IFNAME=lo; sizes="--sizes 8,1K,64K,1M,16M,64M"; iters="-w 2 -n 5" ;;
  *) echo "schedule_campaign.sh: mode must be two-gpus or one-gpu, got '$mode'" >&2; exit 2 ;;
esac
mkdir -p "$out"
run() { "$py" -m torch.distributed.run --standalone --nproc-per-node=2 "$@" "${emulate[@]}" --timeout 300; }
for timing in ${TIMINGS:-eager graph}; do
  t=(--timing "$timing" --graph-calls 4)
  for c in 1 2 4 8 16; do
    run runners/schedule_bench.py --algo ring --channels "$c" $sizes $iters "${t[@]}" --with-native \
        --out "$out/exec_${timing}_ring_c$c.jsonl"
  done
  run runners/schedule_bench.py --algo double-tree $sizes $iters "${t[@]}" --with-native --out "$out/exec_${timing}_tree.jsonl"
  run runners/schedule_bench.py --schedule "$schedule" $iters "${t[@]}" --with-native --out "$out/exec_${timing}_hand.jsonl"
  for algo in Ring Tree; do
    for proto in LL Simple; do
      run runners/allreduce_bench.py --algo "$algo" --proto "$proto" $sizes $iters "${t[@]}" \
          --out "$out/nccl_${timing}_${algo}_${proto}.jsonl"
    done
  done
done
