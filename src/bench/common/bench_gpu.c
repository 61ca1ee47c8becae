#define _POSIX_C_SOURCE 200809L /* posix_memalign, sysconf */
#include "bench_gpu.h"
#include "bench_common.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(SENTINEL_GPU_CUDA) && defined(SENTINEL_GPU_HIP)
#error "define SENTINEL_GPU_CUDA or SENTINEL_GPU_HIP, not both"
#endif

/* One name per runtime call: GPU_CALL(GetDeviceCount) is cudaGetDeviceCount
 * or hipGetDeviceCount, GPU_FN("GetDeviceCount") its name for a message. */
#if defined(SENTINEL_GPU_CUDA)
#include <cuda_runtime_api.h>
#define GPU_RUNTIME "cuda"
#define GPU_LABEL "CUDA"
#define GPU_CALL(fn) cuda##fn
#define GPU_FN(fn) "cuda" fn
#define GPU_SUCCESS cudaSuccess
typedef cudaError_t gpu_error;
typedef struct cudaDeviceProp gpu_props;
#elif defined(SENTINEL_GPU_HIP)
#include <hip/hip_runtime_api.h>
#define GPU_RUNTIME "hip"
#define GPU_LABEL "HIP"
#define GPU_CALL(fn) hip##fn
#define GPU_FN(fn) "hip" fn
#define GPU_SUCCESS hipSuccess
typedef hipError_t gpu_error;
typedef hipDeviceProp_t gpu_props;
#endif

const char *const sb_buf_kind_names[SB_NBUF_KIND] = {"host", "device"};

#define NOT_BUILT                                                                      \
    "--buffers device needs GPU support, but this %s was built without it: rebuild it " \
    "with 'make %s GPU=cuda CUDA_HOME=<CUDA toolkit>' (or 'GPU=rocm ROCM_PATH=<ROCm>')"

const char *sb_gpu_runtime(void)
{
#ifdef GPU_RUNTIME
    return GPU_RUNTIME;
#else
    return NULL;
#endif
}

#ifdef GPU_RUNTIME
/* "<call>: <the runtime's error string>" into err; returns -1. */
static int gpu_failed(const char *call, gpu_error e, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s", call, GPU_CALL(GetErrorString)(e));
    return -1;
}
#endif

int sb_gpu_query(sb_gpu_info *info, char *err, size_t errlen)
{
    memset(info, 0, sizeof *info);
#ifdef GPU_RUNTIME
    gpu_error e = GPU_CALL(GetDeviceCount)(&info->count);
    if (e != GPU_SUCCESS) {
        info->count = 0;
        return gpu_failed(GPU_FN("GetDeviceCount"), e, err, errlen);
    }
    if (info->count < 1) {
        snprintf(err, errlen, "%s: %d devices", GPU_FN("GetDeviceCount"), info->count);
        return -1;
    }
    if ((e = GPU_CALL(GetDevice)(&info->device)) != GPU_SUCCESS)
        return gpu_failed(GPU_FN("GetDevice"), e, err, errlen);
    gpu_props props;
    memset(&props, 0, sizeof props);
    if ((e = GPU_CALL(GetDeviceProperties)(&props, info->device)) != GPU_SUCCESS)
        return gpu_failed(GPU_FN("GetDeviceProperties"), e, err, errlen);
    snprintf(info->name, sizeof info->name, "%s", props.name[0] ? props.name : "unknown");
    for (char *p = info->name; *p; p++)
        if (isspace((unsigned char)*p) || !isprint((unsigned char)*p))
            *p = '_';
    return 0;
#else
    snprintf(err, errlen, "built without GPU support (make GPU=cuda or GPU=rocm)");
    return -1;
#endif
}

/* What went wrong on one rank, as rank 0 prints it. */
typedef struct {
    char line[512]; /* the SENTINEL_ERROR record */
    char msg[1536]; /* the message for stderr */
} gpu_problem;

/* This rank's device: local rank % count. Returns 0, or -1 with *p filled. */
static int select_device(MPI_Comm comm, const char *program, sb_gpu_info *info,
                         gpu_problem *p)
{
    int rank, local;
    char host[SB_HOST], why[1024] = "";
    MPI_Comm node;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    sb_host_name(host);
#ifdef GPU_RUNTIME
    gpu_error e = GPU_CALL(GetDeviceCount)(&info->count);
    if (e != GPU_SUCCESS || info->count < 1) {
        if (e != GPU_SUCCESS)
            gpu_failed(GPU_FN("GetDeviceCount"), e, why, sizeof why);
        else
            snprintf(why, sizeof why, "%s: %d devices", GPU_FN("GetDeviceCount"), info->count);
        snprintf(p->line, sizeof p->line,
                 "SENTINEL_ERROR bench=%s what=no_gpu_device runtime=%s host=%s rank=%d",
                 program, GPU_RUNTIME, host, rank);
        snprintf(p->msg, sizeof p->msg,
                 "--buffers device: no %s device visible to rank %d on host %s (%s); stopped "
                 "before measuring", GPU_LABEL, rank, host, why);
        return -1;
    }
    int device = local % info->count;
    if ((e = GPU_CALL(SetDevice)(device)) != GPU_SUCCESS ||
        sb_gpu_query(info, why, sizeof why) != 0) {
        if (e != GPU_SUCCESS)
            gpu_failed(GPU_FN("SetDevice"), e, why, sizeof why);
        snprintf(p->line, sizeof p->line,
                 "SENTINEL_ERROR bench=%s what=gpu_select_failed runtime=%s host=%s rank=%d "
                 "device=%d", program, GPU_RUNTIME, host, rank, device);
        snprintf(p->msg, sizeof p->msg,
                 "--buffers device: rank %d on host %s cannot use %s device %d of %d (%s); "
                 "stopped before measuring", rank, host, GPU_LABEL, device, info->count, why);
        return -1;
    }
    return 0;
#else
    (void)info;
    (void)why;
    snprintf(p->line, sizeof p->line, "SENTINEL_ERROR bench=%s what=gpu_not_built", program);
    snprintf(p->msg, sizeof p->msg, NOT_BUILT, program, program);
    return -1;
#endif
}

int sb_gpu_setup(MPI_Comm comm, const char *program, sb_gpu_info *info)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    gpu_problem p;
    memset(&p, 0, sizeof p);
    memset(info, 0, sizeof *info);
    int first = select_device(comm, program, info, &p) == 0 ? size : rank;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == size)
        return 0;
    /* Rank 0 prints the problem of the first rank that has one. */
    if (first != 0 && rank == first)
        MPI_Send(&p, (int)sizeof p, MPI_BYTE, 0, 0, comm);
    if (rank == 0) {
        if (first != 0)
            MPI_Recv(&p, (int)sizeof p, MPI_BYTE, first, 0, comm, MPI_STATUS_IGNORE);
        printf("%s\n", p.line);
        fflush(stdout);
        fprintf(stderr, "%s: error: %s\n", program, p.msg);
        fflush(stderr);
    }
    return -1;
}

void *sb_buf_alloc(sb_buf_kind kind, size_t bytes, char *err, size_t errlen)
{
    void *p = NULL;
    if (kind == SB_BUF_HOST) {
        if (posix_memalign(&p, (size_t)sysconf(_SC_PAGESIZE), bytes) != 0) {
            snprintf(err, errlen, "posix_memalign of %zu bytes failed", bytes);
            return NULL;
        }
        return p;
    }
#ifdef GPU_RUNTIME
    gpu_error e = GPU_CALL(Malloc)(&p, bytes);
    if (e != GPU_SUCCESS) {
        gpu_failed(GPU_FN("Malloc"), e, err, errlen);
        return NULL;
    }
    return p;
#else
    snprintf(err, errlen, "device memory: built without GPU support (make GPU=cuda or GPU=rocm)");
    return NULL;
#endif
}

int sb_buf_set(sb_buf_kind kind, void *buf, int value, size_t bytes, char *err, size_t errlen)
{
    if (kind == SB_BUF_HOST) {
        memset(buf, value, bytes);
        return 0;
    }
#ifdef GPU_RUNTIME
    gpu_error e = GPU_CALL(Memset)(buf, value, bytes);
    if (e != GPU_SUCCESS)
        return gpu_failed(GPU_FN("Memset"), e, err, errlen);
    /* The memset may run after the call returns: done before MPI reads it. */
    if ((e = GPU_CALL(DeviceSynchronize)()) != GPU_SUCCESS)
        return gpu_failed(GPU_FN("DeviceSynchronize"), e, err, errlen);
    return 0;
#else
    (void)buf;
    (void)value;
    (void)bytes;
    snprintf(err, errlen, "device memory: built without GPU support (make GPU=cuda or GPU=rocm)");
    return -1;
#endif
}

void sb_buf_free(sb_buf_kind kind, void *buf)
{
    if (buf == NULL)
        return;
    if (kind == SB_BUF_HOST) {
        free(buf);
        return;
    }
#ifdef GPU_RUNTIME
    (void)GPU_CALL(Free)(buf);
#endif
}
