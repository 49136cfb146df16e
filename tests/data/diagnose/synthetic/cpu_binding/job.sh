#!/bin/bash
mpirun -np 16 -H node01:8,node02:8 --bind-to core --map-by slot -x NCCL_DEBUG=WARN -x LD_LIBRARY_PATH ./build/all_reduce_perf -b 1K -e 4G -f 4 -g 1
