/*
 * tensor_runtime.h -- the part of HPVM's tensor runtime API that host code of HPVM-C tensor
 * programs uses (creating and reading tensors), for hpvm's C front end.
 *
 * Written for this project with HPVM's names and argument orders. Each function is a host
 * call that hpvm's runtime answers while the program runs (src/hpvm/c/tensorrt.py): a
 * tensor's data is a NumPy float32 array the runtime owns, and the struct Tensor below is
 * its C view. Only float32 NCHW tensors exist. See docs/hpvm-c.md, "Tensor programs", for
 * every difference from HPVM's runtime.
 */
#ifndef HPVM_C_TENSOR_RUNTIME_H
#define HPVM_C_TENSOR_RUNTIME_H

#ifdef __cplusplus
#include <cstddef>
extern "C" {
#else
#include <stddef.h>
#endif

/* data_type and data_format values (HPVM takes cuDNN's: CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW). */
enum { float_type = 0, nchw = 0 };

struct Dimension {
  int num_dims;
  size_t *dim_sizes; /* num_dims extents, outermost first (N, C, H, W) */
};

struct Tensor {
  int data_type;        /* float_type */
  int cur_type;         /* float_type */
  int data_format;      /* nchw */
  int data_placement;   /* 0: host */
  void *host_data;      /* num_elems floats, row-major NCHW */
  size_t num_elems;
  void *gpu_data;       /* NULL: no device copy here */
  void *gpu_half_data;  /* NULL */
  size_t size_in_bytes; /* num_elems * sizeof(float) */
  struct Dimension dims;
  void *tensor_desc;      /* NULL (cuDNN descriptors in HPVM) */
  void *tensor_half_desc; /* NULL */
};

/* A new zero-filled tensor of extents dim1 x dim2 x dim3 x dim4 (N, C, H, W). */
void *create4DTensor(int data_type, int data_format, size_t dim1_size, size_t dim2_size,
                     size_t dim3_size, size_t dim4_size);
/* A tensor of those extents read from a file of float32 values (native byte order). */
void *readTrainedWeights(const char *file_name, int data_type, long dim1_size, long dim2_size,
                         long dim3_size, long dim4_size);
/* Copy size_in_bytes bytes from data_ptr into the tensor's data. */
void initTensorData(void *tensor, void *data_ptr, size_t size_in_bytes);
/* Make the tensor's data current in host_data (destination 0: the host; it always is here). */
void hpvm_request_tensor(void *tensor, int destination);
/* Release a tensor (its struct and data). */
void freeTensor(void *tensor);
/* Start and end the tensor runtime: nothing to set up here; cleanup releases every tensor. */
void llvm_hpvm_initTensorRt(int gpuid);
void llvm_hpvm_cleanupTensorRt(void);

#ifdef __cplusplus
}
#endif

#endif /* HPVM_C_TENSOR_RUNTIME_H */
