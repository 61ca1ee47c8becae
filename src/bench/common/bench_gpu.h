/* Message buffers in host or GPU memory, for the benchmarks that take
 * --buffers host|device.
 *
 * The GPU runtime is chosen at compile time: -DSENTINEL_GPU_CUDA (CUDA
 * runtime, cudaMalloc; link -lcudart) or -DSENTINEL_GPU_HIP (HIP on ROCm,
 * hipMalloc; with -D__HIP_PLATFORM_AMD__, link -lamdhip64); the Makefile's
 * GPU=cuda / GPU=rocm set them. Without either, host buffers work as always
 * and every GPU function fails with a message naming the rebuild.
 *
 * Host code never reads or writes device memory: sb_buf_set fills a device
 * buffer with the runtime's memset. Handing device buffers to MPI needs a
 * GPU-aware MPI (Open MPI or MPICH built with CUDA/ROCm, e.g. through UCX). */
#ifndef SENTINEL_BENCH_GPU_H
#define SENTINEL_BENCH_GPU_H

#include <mpi.h>
#include <stddef.h>

/* Where a benchmark's message buffers live. */
typedef enum { SB_BUF_HOST, SB_BUF_DEVICE, SB_NBUF_KIND } sb_buf_kind;

/* "host", "device": the values of --buffers, indexed by sb_buf_kind (for
 * SB_OPTION_NAME). */
extern const char *const sb_buf_kind_names[SB_NBUF_KIND];

/* The usage line of --buffers. */
#define SB_BUFFERS_USAGE                                                                  \
    "  --buffers host|device  where the message buffers live (default host); device:\n" \
    "                 GPU memory, needs a GPU build (make GPU=cuda|rocm) and a\n"        \
    "                 GPU-aware MPI\n"

/* The GPU runtime compiled in: "cuda", "hip", or NULL (host only). */
const char *sb_gpu_runtime(void);

#define SB_GPU_NAME 256

/* What sb_gpu_query and sb_gpu_setup report of a rank's GPUs. */
typedef struct {
    int count;              /* devices visible to the process */
    int device;             /* the current device */
    char name[SB_GPU_NAME]; /* its name, every blank replaced by '_' (a record value) */
} sb_gpu_info;

/* The number of devices visible to this process, the current device and its
 * name. Returns 0, or -1 after writing the problem to err: a build without
 * GPU support, the runtime's error string (e.g. "cudaGetDeviceCount: no
 * CUDA-capable device is detected"), or no device at all. Local: no MPI. */
int sb_gpu_query(sb_gpu_info *info, char *err, size_t errlen);

/* Collective on comm, for --buffers device before any measurement: every
 * rank selects device (local rank % count), the local rank being its rank
 * among the ranks of comm that share its node (MPI_Comm_split_type with
 * MPI_COMM_TYPE_SHARED), and fills *info. Returns 0 on every rank, or -1 on
 * every rank after rank 0 printed the problem of the first rank that had
 * one: a line on stdout, e.g.
 *   SENTINEL_ERROR bench=<program> what=no_gpu_device runtime=cuda host=vm rank=0
 * (what=gpu_not_built for a build without GPU support, what=gpu_select_failed
 * when the device cannot be made current) and on stderr
 *   <program>: error: <message naming the runtime's error string or the rebuild> */
int sb_gpu_setup(MPI_Comm comm, const char *program, sb_gpu_info *info);

/* `bytes` bytes of kind: host memory page-aligned (posix_memalign), device
 * memory from cudaMalloc/hipMalloc. NULL on failure, after writing the
 * problem to err (the runtime's error string for device memory). */
void *sb_buf_alloc(sb_buf_kind kind, size_t bytes, char *err, size_t errlen);

/* Sets `bytes` bytes of buf to value: memset on the host, cudaMemset /
 * hipMemset (then a device synchronisation) on the device. Returns 0, or -1
 * after writing the problem to err. */
int sb_buf_set(sb_buf_kind kind, void *buf, int value, size_t bytes, char *err, size_t errlen);

/* Frees a buffer of sb_buf_alloc (free, cudaFree, hipFree); NULL is allowed. */
void sb_buf_free(sb_buf_kind kind, void *buf);

#endif
