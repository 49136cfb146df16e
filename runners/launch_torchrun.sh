#!/usr/bin/env bash
# Multi-node torchrun launcher (c10d rendezvous) for runners/allreduce_bench.py.
#
# Run the same line on every node (node 0's address is the rendezvous endpoint):
#   NNODES=2 GPUS_PER_NODE=8 RDZV_HOST=node0 runners/launch_torchrun.sh -b 8 -e 4G --out out/ar.jsonl
# One node:  NNODES=1 GPUS_PER_NODE=2 runners/launch_torchrun.sh -b 8 -e 4G --timing graph --nccl-probe
# SCRIPT=other.py runs another torchrun script with the same environment.
#
# Environment that matters (set before calling; recorded in the output's meta "env"):
#   NCCL_SOCKET_IFNAME  interface(s) for NCCL's bootstrap and socket transport, e.g. eth0, ^lo,docker
#   NCCL_IB_DISABLE=1   force the socket transport (no InfiniBand / RoCE)
#   NCCL_IB_HCA         which HCAs/ports NCCL may use, e.g. mlx5_0:1,mlx5_1:1
#   NCCL_IB_GID_INDEX   RoCE GID index (often 3)
#   NCCL_NET_GDR_LEVEL  GPUDirect RDMA distance (e.g. PHB)
#   NCCL_SOCKET_NTHREADS / NCCL_NSOCKS_PERTHREAD  socket transport parallelism
#   NCCL_ALGO / NCCL_PROTO  (or the runner's --algo / --proto)
#   NCCL_DEBUG=WARN     default of the runner (into a temp file); INFO only for probes
#   GLOO_SOCKET_IFNAME  interface for gloo (the runner's CPU side group), usually = NCCL_SOCKET_IFNAME
# Always forced here (NVLink SHARP / multicast off): NCCL_NVLS_ENABLE=0,
# TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1.
set -euo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
NNODES="${NNODES:-1}"
die() { echo "launch_torchrun: error: $*" >&2; exit 2; }
if [ -z "${GPUS_PER_NODE:-}" ]; then   # nvidia-smi's GPUs; none (or no nvidia-smi): say so, exit 2
  GPUS_PER_NODE="$( { nvidia-smi -L 2>/dev/null || true; } | grep -c '^GPU' || true)"
  [ "$GPUS_PER_NODE" -ge 1 ] 2>/dev/null || die "no GPU found by nvidia-smi: set GPUS_PER_NODE (GPUs per node)"
fi
for v in NNODES GPUS_PER_NODE; do
  case "${!v}" in ''|*[!0-9]*|0*) die "$v must be a whole number >= 1, got '${!v}'" ;; esac
done
command -v torchrun >/dev/null 2>&1 || die "torchrun not found (pip install -e '.[runners]', or activate the env with torch)"
RDZV_HOST="${RDZV_HOST:-localhost}"
RDZV_PORT="${RDZV_PORT:-29500}"
RDZV_ID="${RDZV_ID:-collsim-${USER:-job}}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SCRIPT="${SCRIPT:-$HERE/allreduce_bench.py}"
if [ "$NNODES" = 1 ]; then
  exec torchrun --standalone --nproc-per-node="$GPUS_PER_NODE" "$SCRIPT" "$@"
fi
exec torchrun --nnodes="$NNODES" --nproc-per-node="$GPUS_PER_NODE" \
  --rdzv-backend=c10d --rdzv-endpoint="$RDZV_HOST:$RDZV_PORT" --rdzv-id="$RDZV_ID" \
  "$SCRIPT" "$@"
