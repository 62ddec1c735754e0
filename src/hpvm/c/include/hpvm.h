/*
 * hpvm.h -- the HPVM-C API, as HPVM's HPVM-C specification (hpvm-c.rst) defines it, for
 * hpvm's C front end (python: hpvm.c.compile; command: hpvm c run FILE).
 *
 * Written for this project from the specification: the same names, argument orders and
 * target enumeration, so HPVM's own C and C++ programs compile unchanged against it.
 * Every function here is a marker the front end rewrites (graph building, queries, memory,
 * synchronization) or a host call the runtime provides while the program runs; none of
 * them has a C definition. See docs/hpvm-c.md for what each one becomes.
 */
#ifndef HPVM_C_HPVM_H
#define HPVM_C_HPVM_H

#ifdef __cplusplus
#include <cstddef>
#define HPVM_C_NOEXCEPT noexcept
#else
#include <stddef.h>
#define HPVM_C_NOEXCEPT
#endif

/* Targets a node may be hinted to (HPVMHint.h). C spells them CPU_TARGET, C++ hpvm::CPU_TARGET. */
#ifdef __cplusplus
namespace hpvm {
#endif
enum Target {
  None = 0,
  CPU_TARGET,
  GPU_TARGET,
  CUDNN_TARGET,
  TENSOR_TARGET,
  CPU_OR_GPU_TARGET,
  FPGA_TARGET,
  NUM_TARGETS
};
#ifdef __cplusplus
}
#endif

/* DEVICE, the GPU hint. HPVM's header defines it as GPU_TARGET (its builds pass
   -DDEVICE=GPU_TARGET or CPU_TARGET), so its C++ programs write hpvm::DEVICE (parboil's
   stencil does); others, written against a header that spelt it hpvm::GPU_TARGET, write
   DEVICE alone. In C++ it names a constant of namespace hpvm that a using-declaration
   also brings to global scope, so both spellings compile. */
#ifndef DEVICE
#ifdef __cplusplus
namespace hpvm {
constexpr Target __hpvm_device_target = GPU_TARGET;
}
using hpvm::__hpvm_device_target;
#define DEVICE __hpvm_device_target
#else
#define DEVICE GPU_TARGET
#endif
#endif

#ifdef __cplusplus
extern "C" {
void __hpvm__hint(hpvm::Target) HPVM_C_NOEXCEPT;
#else
void __hpvm__hint(enum Target) HPVM_C_NOEXCEPT;
#endif

/* Graph building (internal node functions only). */
void *__hpvm__createNodeND(unsigned dims, ...) HPVM_C_NOEXCEPT; /* (dims, function, size_0 .. size_dims-1) */
void *__hpvm__edge(void *src, void *dst, unsigned replType, unsigned sp, unsigned dp,
                   unsigned isStream) HPVM_C_NOEXCEPT;
void __hpvm__bindIn(void *node, unsigned ip, unsigned ic, unsigned isStream) HPVM_C_NOEXCEPT;
void __hpvm__bindOut(void *node, unsigned oc, unsigned op, unsigned isStream) HPVM_C_NOEXCEPT;

/* Node function properties. */
void __hpvm__attributes(unsigned nIn, ...) HPVM_C_NOEXCEPT; /* (nIn, in ptrs..., nOut, out ptrs...) */
void __hpvm__return(unsigned n, ...) HPVM_C_NOEXCEPT;       /* (n, output values...) */
void __hpvm__order(unsigned n, ...) HPVM_C_NOEXCEPT;
void __hpvm__isNonZeroLoop(long, ...) HPVM_C_NOEXCEPT;

/* Host code. */
void __hpvm__init(void) HPVM_C_NOEXCEPT;
void __hpvm__cleanup(void) HPVM_C_NOEXCEPT;
void *__hpvm__launch(unsigned isStream, ...) HPVM_C_NOEXCEPT; /* (isStream, rootFunction, argsStruct) */
void __hpvm__wait(void *graph) HPVM_C_NOEXCEPT;
void __hpvm__push(void *graph, void *args) HPVM_C_NOEXCEPT;
void *__hpvm__pop(void *graph) HPVM_C_NOEXCEPT;
void llvm_hpvm_track_mem(void *ptr, size_t bytes) HPVM_C_NOEXCEPT;
void llvm_hpvm_untrack_mem(void *ptr) HPVM_C_NOEXCEPT;
void llvm_hpvm_request_mem(void *ptr, size_t bytes) HPVM_C_NOEXCEPT;

/* Queries (leaf node functions). */
void *__hpvm__getNode(void) HPVM_C_NOEXCEPT;
void *__hpvm__getParentNode(void *node) HPVM_C_NOEXCEPT;
long __hpvm__getNodeInstanceID_x(void *node) HPVM_C_NOEXCEPT;
long __hpvm__getNodeInstanceID_y(void *node) HPVM_C_NOEXCEPT;
long __hpvm__getNodeInstanceID_z(void *node) HPVM_C_NOEXCEPT;
long __hpvm__getNumNodeInstances_x(void *node) HPVM_C_NOEXCEPT;
long __hpvm__getNumNodeInstances_y(void *node) HPVM_C_NOEXCEPT;
long __hpvm__getNumNodeInstances_z(void *node) HPVM_C_NOEXCEPT;

/* Memory and synchronization (leaf node functions). */
void *__hpvm__malloc(long bytes) HPVM_C_NOEXCEPT;
void __hpvm__barrier(void) HPVM_C_NOEXCEPT;

/* Atomics on 32-bit signed integers; each returns the old value. */
int __hpvm__atomic_add(int *, int) HPVM_C_NOEXCEPT;
int __hpvm__atomic_sub(int *, int) HPVM_C_NOEXCEPT;
int __hpvm__atomic_xchg(int *, int) HPVM_C_NOEXCEPT;
int __hpvm__atomic_inc(int *) HPVM_C_NOEXCEPT;
int __hpvm__atomic_dec(int *) HPVM_C_NOEXCEPT;
int __hpvm__atomic_min(int *, int) HPVM_C_NOEXCEPT;
int __hpvm__atomic_max(int *, int) HPVM_C_NOEXCEPT;
int __hpvm__atomic_and(int *, int) HPVM_C_NOEXCEPT;
int __hpvm__atomic_or(int *, int) HPVM_C_NOEXCEPT;
int __hpvm__atomic_xor(int *, int) HPVM_C_NOEXCEPT;
int __hpvm__atomic_cmpxchg(int *, int expected, int desired) HPVM_C_NOEXCEPT; /* old value */
int __hpvm__atomic_umin(int *, int) HPVM_C_NOEXCEPT; /* as unsigned */
int __hpvm__atomic_umax(int *, int) HPVM_C_NOEXCEPT;

/* Float math in leaves (HPVM's builtins: LLVM's sqrt, floor, sin, cos; rsqrt is 1 / sqrt). */
float __hpvm__floor(float) HPVM_C_NOEXCEPT;
float __hpvm__rsqrt(float) HPVM_C_NOEXCEPT;
float __hpvm__sqrt(float) HPVM_C_NOEXCEPT;
float __hpvm__sin(float) HPVM_C_NOEXCEPT;
float __hpvm__cos(float) HPVM_C_NOEXCEPT;

/* The node's number for HPVM's approximation tuner (accepted; it changes nothing here). */
void *__hpvm__node_id(int) HPVM_C_NOEXCEPT;

/* Tensor intrinsics (leaves hinted TENSOR_TARGET / CUDNN_TARGET); tensors are void *. */
void *__hpvm__tensor_convolution(void *input, void *filter, int pad_h, int pad_w, int stride_h,
                                 int stride_w) HPVM_C_NOEXCEPT;
void *__hpvm__tensor_group_convolution(void *input, void *filter, int pad_h, int pad_w,
                                       int stride_h, int stride_w, int conv_mode,
                                       int conv_groups) HPVM_C_NOEXCEPT;
void *__hpvm__tensor_batchnorm(void *input, void *gamma, void *beta, void *mean, void *variance,
                               double epsilon) HPVM_C_NOEXCEPT;
void *__hpvm__tensor_add(void *a, void *b) HPVM_C_NOEXCEPT;
void *__hpvm__tensor_mul(void *a, void *b) HPVM_C_NOEXCEPT;
void *__hpvm__tensor_relu(void *) HPVM_C_NOEXCEPT;
void *__hpvm__tensor_clipped_relu(void *) HPVM_C_NOEXCEPT;
void *__hpvm__tensor_tanh(void *) HPVM_C_NOEXCEPT;
void *__hpvm__tensor_sigmoid(void *) HPVM_C_NOEXCEPT;
void *__hpvm__tensor_softmax(void *) HPVM_C_NOEXCEPT;
void *__hpvm__tensor_pool_max(void *input, int window_h, int window_w, int pad_h, int pad_w,
                              int stride_h, int stride_w) HPVM_C_NOEXCEPT;
void *__hpvm__tensor_pool_mean(void *input, int window_h, int window_w, int pad_h, int pad_w,
                               int stride_h, int stride_w) HPVM_C_NOEXCEPT;
void *__hpvm__tensor_pool_min(void *input, int window_h, int window_w, int pad_h, int pad_w,
                              int stride_h, int stride_w) HPVM_C_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* HPVM_C_HPVM_H */
