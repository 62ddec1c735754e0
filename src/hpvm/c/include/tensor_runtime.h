/*
 * tensor_runtime.h -- HPVM's tensor runtime as the host code of HPVM-C DNN programs calls it,
 * for hpvm's C front end.
 *
 * Written for this project after HPVM's headers (tensor_runtime.h, tensor.h, tensorUtils.h,
 * rt-controller-api.h of hpvm-tensor-rt): the same names, signatures, argument orders, enum
 * values and struct Tensor layout, so the host code of HPVM's DNN programs compiles against
 * it and reads the bytes it expects. It declares what that host code calls (making, reading
 * and freeing tensors, labels, accuracy); HPVM's tensor operation API (tensorConvolution...),
 * which HPVM's code generator calls, is not here: a program's tensor operations are the
 * __hpvm__tensor_* intrinsics of hpvm.h. Each function is a host call that hpvm's runtime
 * answers while the program runs (src/hpvm/c/tensorrt.py): a tensor's data is a NumPy array
 * the runtime owns, and struct Tensor is its C view. docs/hpvm-c.md, "Tensor programs", says
 * what each function does here and lists every difference from HPVM's headers.
 */
#ifndef HPVM_C_TENSOR_RUNTIME_H
#define HPVM_C_TENSOR_RUNTIME_H

#ifdef __cplusplus
#include <cstddef>
#include <cstdint>
#define HPVM_C_DEFAULT(value) = value
extern "C" {
#else
#include <stddef.h>
#include <stdint.h>
#define HPVM_C_DEFAULT(value)
#endif

/* data_type values: HPVM takes cuDNN's (CUDNN_DATA_FLOAT = 0...). Only float_type exists here. */
enum Tensor_type_t { float_type = 0, double_type, half_type, int_type, float2_type, half2_type };
/* data_format values. Only nchw exists here. */
enum Tensor_format_t { nchw = 0, nhwc };
/* Where a tensor's data is current: always HOST here (no device copies). HPVM names the other
 * value DEVICE, which hpvm.h defines as a macro (a target hint); it is not declared here. */
typedef enum data_location_t { HOST = 0 } data_location_t;

struct Dimension {
  int num_dims;
  size_t *dim_sizes; /* num_dims extents, outermost first (N, C, H, W) */
};

/* HPVM's fields, in HPVM's order and sizes; the cuDNN descriptors are void * here, and NULL,
 * as are the device pointers. */
struct Tensor {
  int data_type;                  /* float_type */
  int cur_type;                   /* float_type */
  int data_format;                /* nchw */
  data_location_t data_placement; /* HOST */
  void *tensor_desc;              /* NULL (cudnnTensorDescriptor_t in HPVM) */
  void *filter_desc;              /* NULL (cudnnFilterDescriptor_t) */
  void *tensor_half_desc;         /* NULL */
  void *filter_half_desc;         /* NULL */
  void *host_data;                /* num_elems floats, row-major; NULL once freed */
  void *gpu_data;                 /* NULL */
  void *gpu_half_data;            /* NULL */
  size_t num_elems;
  size_t size_in_bytes; /* num_elems * sizeof(float) */
  struct Dimension dims;
};

/* -- starting and ending the runtime (nothing to set up here: see docs/hpvm-c.md) ------------- */
void llvm_hpvm_initTensorRt(int gpuid HPVM_C_DEFAULT(0));
void llvm_hpvm_cleanupTensorRt(void);
void llvm_hpvm_initApproxhpvmRt(int gpuid HPVM_C_DEFAULT(0));
void llvm_hpvm_cleanupApproxhpvmRt(void);

/* -- tensors ------------------------------------------------------------------------------------ */
/* A new zero-filled dim1_size x dim2_size tensor (2 dimensions: a fully connected layer's
 * weights, (K, M)). */
void *create2DTensor(int data_type, size_t dim1_size, size_t dim2_size);
/* A new zero-filled tensor of extents dim1 x dim2 x dim3 x dim4 (N, C, H, W). */
void *create4DTensor(int data_type, int data_format, size_t dim1_size, size_t dim2_size,
                     size_t dim3_size, size_t dim4_size);
/* Copy the tensor's whole data (size_in_bytes must be the tensor's) from data_ptr. */
void initTensorData(void *tensor, void *data_ptr, size_t size_in_bytes);
/* Make the tensor's data current at destination (0: the host, where it always is here). */
void hpvm_request_tensor(void *tensor, int destination);
/* Release the tensor's data (host_data becomes NULL; the struct stays readable). */
void freeTensor(void *tensor);
/* Forget the tensors made so far: freeBatchMemory frees only those made after this call. */
void startMemTracking(void);
/* Free every tensor made since startMemTracking (or the last freeBatchMemory): a batch's input,
 * and the results its graph returned. */
void freeBatchMemory(void);

/* -- HPVM's files: raw values in native byte order, no header (tensorUtils.h) ------------------ */
/* A dim1 x dim2 x dim3 x dim4 tensor of the first float32 values of the file. */
struct Tensor *readTrainedWeights(const char *file_name, int data_type, long int dim1_size,
                                  long int dim2_size, long int dim3_size, long int dim4_size);
/* Images start .. end-1 of a file of float32 (N, dim2, dim3, dim4) images: an
 * (end - start) x dim2 x dim3 x dim4 tensor. */
struct Tensor *readInputBatch(const char *file_name, long data_type, long start, long end,
                              long dim2_size, long dim3_size, long dim4_size);
/* The first num_labels labels of a file of uint8 labels (malloc'd: the caller may free it). */
uint8_t *readLabels(const char *labels_file, int num_labels);
/* The first num_labels labels of a file of uint32 labels (malloc'd). */
uint32_t *readLabels3(const char *labels_file, int num_labels);
/* Labels start .. end-1 of a file of uint32 labels (malloc'd). */
uint32_t *readLabelsBatch3(const char *labels_file, int start, int end);

/* -- accuracy ----------------------------------------------------------------------------------- */
/* The percentage of rows of an (N, classes) result whose largest value is at the label's
 * class; printed, written to the file final_accuracy (current directory) and returned. */
float computeAccuracy3(uint32_t *labels, void *result_ptr);
/* Print the accuracy as the final one and write it to final_accuracy. */
void dumpFinalAccuracy(float accuracy);

/* -- HPVM's runtime controller (rt-controller-api.h) --------------------------------------------- */
/* Approximation configurations are not supported here: this call fails (run without -c). */
void llvm_hpvm_initializeRuntimeController(const char *config_file);
/* After a batch: its accuracy against labels start .. end-1 of the uint32 labels file, printed
 * as computeAccuracy3 does; final_accuracy gets the average over the batches so far. */
void llvm_hpvm_invokeRtControl(void *result, const char *labels_file, int start, int end);

#ifdef __cplusplus
}
#endif
#undef HPVM_C_DEFAULT

#endif /* HPVM_C_TENSOR_RUNTIME_H */
