// The CUDA built-ins the kernels of detour bodies use, for C++20 on host threads: one
// std::thread per CUDA thread of a block, the blocks one after another (so a function-local
// static is one block's shared memory), `__syncthreads` a barrier of the block's threads.
#include <atomic>
#include <barrier>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <type_traits>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>

struct dim3 {
    unsigned x, y, z;
};
thread_local dim3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
// A GNU attribute: `alignas` may not stand between `static` and the type.
#define __align__(n) __attribute__((aligned(n)))

// CUDA's vector types, as a kernel's vector moves name them (`*(float4*)p = *(const
// float4*)q`).
struct alignas(8) float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};

static std::barrier<>* parray_block_barrier;
inline void __syncthreads() { parray_block_barrier->arrive_and_wait(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

template <class T> T atomicAdd(T* p, std::type_identity_t<T> v) {
    return std::atomic_ref<T>(*p).fetch_add(v);
}
template <class T> T atomicExch(T* p, std::type_identity_t<T> v) {
    return std::atomic_ref<T>(*p).exchange(v);
}
template <class T> T atomicCAS(T* p, std::type_identity_t<T> compare, std::type_identity_t<T> v) {
    std::atomic_ref<T>(*p).compare_exchange_strong(compare, v);
    return compare;
}

// A full-warp shuffle: every thread of the block publishes its value, then reads its source
// lane's (its own where that is past the warp), between two barriers of the block.
static unsigned long long parray_shfl_slots[1024];
template <class T> T __shfl_down_sync(unsigned, T v, unsigned delta) {
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    parray_shfl_slots[t] = bits;
    __syncthreads();
    unsigned lane = t % 32, src = lane + delta % 32;
    unsigned long long got = src < 32 ? parray_shfl_slots[t - lane + src] : bits;
    __syncthreads();
    T r;
    std::memcpy(&r, &got, sizeof r);
    return r;
}

/// Runs `kernel` on a grid of `blocks` x `threads` (x only).
static void parray_launch(unsigned blocks, unsigned threads, const std::function<void()>& kernel) {
    gridDim = dim3{blocks, 1, 1};
    blockDim = dim3{threads, 1, 1};
    for (unsigned b = 0; b < blocks; b++) {
        std::barrier<> bar(threads);
        parray_block_barrier = &bar;
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < threads; t++) {
            ts.emplace_back([&kernel, b, t] {
                blockIdx = dim3{b, 0, 0};
                threadIdx = dim3{t, 0, 0};
                kernel();
            });
        }
        for (auto& th : ts) th.join();
    }
}

/// Runs body `n` in a child process that SIGALRM ends after `seconds` (a kernel that
/// never ends is reported, not waited for): the child prints `R n v0 v1 ... F fault`, the
/// parent `B n signal s` or `B n exit e` when it did not end normally.
static void parray_guarded(int n, void (*body)(), unsigned seconds) {
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(seconds);
        body();
        std::fflush(stdout);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) std::printf("B %d signal %d\n", n, WTERMSIG(status));
    else if (WEXITSTATUS(status) != 0) std::printf("B %d exit %d\n", n, WEXITSTATUS(status));
}
