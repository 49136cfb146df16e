/* The lecture's "rank + 1" AllReduce in NCCL's own C API: one MPI process per GPU.
 *
 * Every rank puts rank + 1 into a one-element float buffer on its GPU; ncclAllReduce sums it over
 * all ranks; every rank checks the sum against size (size + 1) / 2. The same program as
 * runners/first_steps.py's rank_plus_one, without PyTorch (notebook 08 sets the two side by side).
 *
 * Build (CUDA toolkit, an MPI, and NCCL: a distribution package, a source build, or the pip wheel
 * torch uses; NCCL_HOME is the folder holding include/nccl.h and lib/libnccl.so):
 *   mpicc rank_plus_one.c -o rank_plus_one -I$CUDA_HOME/include -I$NCCL_HOME/include \
 *         -L$CUDA_HOME/lib64 -L$NCCL_HOME/lib -lnccl -lcudart
 * Run (the loader must find libnccl.so.2 at run time too):
 *   export LD_LIBRARY_PATH=$NCCL_HOME/lib:$LD_LIBRARY_PATH
 *   mpirun -np 2 ./rank_plus_one                          # one node, 2 GPUs
 *   mpirun -np 16 -H node0:8,node1:8 ./rank_plus_one      # two nodes of 8 GPUs
 *   NCCL_DEBUG=INFO mpirun -np 2 ./rank_plus_one          # NCCL says what it set up
 */
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK_CUDA(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d CUDA: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)
#define CHECK_NCCL(x) do { ncclResult_t r = (x); if (r != ncclSuccess) { \
  fprintf(stderr, "%s:%d NCCL: %s\n", __FILE__, __LINE__, ncclGetErrorString(r)); MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)

int main(int argc, char **argv) {
  int rank, size, local_rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  /* Which GPU of this node: the rank among the processes that share this node's memory
     (torchrun's LOCAL_RANK). */
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  CHECK_CUDA(cudaSetDevice(local_rank));

  /* Rank 0 makes the communicator's unique id; every rank must receive the same bytes before
     ncclCommInitRank (torchrun's rendezvous and TCPStore do this job for torch.distributed). */
  ncclUniqueId id;
  if (rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, size, id, rank));      /* collective: every rank calls it */

  float *buf, value = (float)(rank + 1);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDA(cudaMalloc((void **)&buf, sizeof(float)));
  CHECK_CUDA(cudaMemcpy(buf, &value, sizeof(float), cudaMemcpyHostToDevice));

  /* In place (send and receive buffer the same), enqueued on `stream`: the call returns at once. */
  CHECK_NCCL(ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, comm, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));                /* now the sum is there */

  CHECK_CUDA(cudaMemcpy(&value, buf, sizeof(float), cudaMemcpyDeviceToHost));
  float expected = size * (size + 1) / 2.0f;
  printf("rank %d of %d (GPU %d): sum %g, expected %g%s\n", rank, size, local_rank, value, expected,
         value == expected ? "" : "  WRONG");

  CHECK_CUDA(cudaFree(buf));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_NCCL(ncclCommDestroy(comm));
  MPI_Finalize();
  return value == expected ? 0 : 1;
}
