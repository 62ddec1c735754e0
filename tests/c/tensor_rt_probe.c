/*
 * The tensor runtime's host calls, one scenario per run (tests/c/test_c_tensor_runtime.py):
 *   probe MODE DIR
 * DIR holds the files the test wrote. Each scenario prints what C sees; the error scenarios
 * end in the call the runtime refuses (the run raises HPVMCError), printing "not reached" if
 * it does not.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpvm.h"
#include "tensor_runtime.h"

/* relu of a 4-D tensor */
void relu_node(void *t, size_t bytes_t) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(1, t, 0);
  void *r = __hpvm__tensor_relu(t);
  __hpvm__return(2, r, (size_t)0);
}

void relu_root(void *t, size_t bytes_t) {
  void *n = __hpvm__createNodeND(0, relu_node);
  __hpvm__bindIn(n, 0, 0, 0);
  __hpvm__bindIn(n, 1, 1, 0);
  __hpvm__bindOut(n, 0, 0, 0);
  __hpvm__bindOut(n, 1, 1, 0);
}

/* a fully connected layer: x (N, K...) times w (K, M) */
void mul_node(void *x, size_t bytes_x, void *w, size_t bytes_w) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(2, x, w, 0);
  void *r = __hpvm__tensor_mul(x, w);
  __hpvm__return(2, r, (size_t)0);
}

void mul_root(void *x, size_t bytes_x, void *w, size_t bytes_w) {
  void *n = __hpvm__createNodeND(0, mul_node);
  __hpvm__bindIn(n, 0, 0, 0);
  __hpvm__bindIn(n, 1, 1, 0);
  __hpvm__bindIn(n, 2, 2, 0);
  __hpvm__bindIn(n, 3, 3, 0);
  __hpvm__bindOut(n, 0, 0, 0);
  __hpvm__bindOut(n, 1, 1, 0);
}

struct ret_t {
  void *tensor;
  size_t bytes;
};
typedef struct __attribute__((__packed__)) {
  void *t;
  size_t bytes_t;
  struct ret_t r;
} ReluIn;
typedef struct __attribute__((__packed__)) {
  void *x;
  size_t bytes_x;
  void *w;
  size_t bytes_w;
  struct ret_t r;
} MulIn;

static struct Tensor *relu(void *t) {
  ReluIn args = {t, 0};
  __hpvm__wait(__hpvm__launch(0, relu_root, &args));
  return (struct Tensor *)args.r.tensor;
}

static struct Tensor *filled(size_t n, size_t c, size_t h, size_t w, const float *values) {
  struct Tensor *t = (struct Tensor *)create4DTensor(float_type, nchw, n, c, h, w);
  initTensorData(t, (void *)values, n * c * h * w * sizeof(float));
  return t;
}

static void print_tensor(const char *name, struct Tensor *t) {
  printf("%s: %d dims", name, t->dims.num_dims);
  for (int i = 0; i < t->dims.num_dims; i++) printf(" %zu", t->dims.dim_sizes[i]);
  printf("; %zu elems, %zu bytes, type %d/%d, format %d, placement %d:", t->num_elems,
         t->size_in_bytes, t->data_type, t->cur_type, t->data_format, (int)t->data_placement);
  for (size_t i = 0; i < t->num_elems; i++) printf(" %g", ((float *)t->host_data)[i]);
  printf("\n");
}

#define FIELD(f) printf(#f " %zu\n", offsetof(struct Tensor, f))

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  const char *mode = argv[1];
  char path[4096], labels[4096];
  snprintf(path, sizeof path, "%s/images.bin", argv[2]);
  snprintf(labels, sizeof labels, "%s/labels32.bin", argv[2]);
  static const float scores[12] = {0.1f, 0.7f, 0.2f, 0.5f, 0.5f, 0.0f,
                                   0.3f, 0.3f, 0.4f, 0.9f, 0.05f, 0.05f};
  __hpvm__init();

  if (!strcmp(mode, "layout")) {
    FIELD(data_type);
    FIELD(cur_type);
    FIELD(data_format);
    FIELD(data_placement);
    FIELD(tensor_desc);
    FIELD(filter_desc);
    FIELD(tensor_half_desc);
    FIELD(filter_half_desc);
    FIELD(host_data);
    FIELD(gpu_data);
    FIELD(gpu_half_data);
    FIELD(num_elems);
    FIELD(size_in_bytes);
    FIELD(dims);
    printf("dims.dim_sizes %zu\n", offsetof(struct Tensor, dims) + offsetof(struct Dimension, dim_sizes));
    printf("sizeof %zu\n", sizeof(struct Tensor));
    printf("types %d %d %d %d %d %d formats %d %d host %d\n", float_type, double_type, half_type,
           int_type, float2_type, half2_type, nchw, nhwc, HOST);
    struct Tensor *t = (struct Tensor *)create4DTensor(float_type, nchw, 1, 2, 1, 3);
    printf("null %d %d %d %d %d %d\n", t->tensor_desc == NULL, t->filter_desc == NULL,
           t->tensor_half_desc == NULL, t->filter_half_desc == NULL, t->gpu_data == NULL,
           t->gpu_half_data == NULL);
    print_tensor("zeros", t);
  } else if (!strcmp(mode, "files")) {
    /* images 1 and 2 of a file of four 2 x 2 x 2 images */
    print_tensor("batch", readInputBatch(path, float_type, 1, 3, 2, 2, 2));
    snprintf(path, sizeof path, "%s/labels8.bin", argv[2]);
    uint8_t *l8 = readLabels(path, 4);
    uint32_t *l32 = readLabels3(labels, 4);
    uint32_t *batch = readLabelsBatch3(labels, 1, 3);
    printf("labels %u %u %u %u | %u %u %u %u | %u %u\n", l8[0], l8[1], l8[2], l8[3], l32[0],
           l32[1], l32[2], l32[3], batch[0], batch[1]);
    free(l8);
    free(l32);
    free(batch);
  } else if (!strcmp(mode, "accuracy")) {
    /* rows: class 1; 0 (a tie: the first); 2; 0. Labels 1 0 0 3: two right */
    struct Tensor *t = filled(4, 3, 1, 1, scores);
    uint32_t want[4] = {1, 0, 0, 3};
    float a = computeAccuracy3(want, t);
    printf("returned %f\n", a);
    dumpFinalAccuracy(a);
  } else if (!strcmp(mode, "controller")) {
    /* labels file: 1 0 2 0 | 0 0 2 1; batches of 4 rows: 100 %, then 50 % (average 75) */
    struct Tensor *t = filled(4, 3, 1, 1, scores);
    llvm_hpvm_invokeRtControl(t, labels, 0, 4);
    llvm_hpvm_invokeRtControl(t, labels, 4, 8);
    printf("controller done\n");
  } else if (!strcmp(mode, "memory")) {
    static const float v[4] = {-1, 2, -3, 4};
    struct Tensor *weights = filled(1, 1, 2, 2, v);
    startMemTracking();
    struct Tensor *input = filled(1, 1, 2, 2, v);
    struct Tensor *result = relu(input);
    print_tensor("result", result);
    freeBatchMemory();
    printf("after freeBatchMemory: input %s, result %s, weights %s\n", input->host_data ? "kept" : "NULL",
           result->host_data ? "kept" : "NULL", weights->host_data ? "kept" : "NULL");
    print_tensor("weights relu", relu(weights));
    freeTensor(weights);
    freeTensor(weights); /* a freed tensor: nothing more to do, as HPVM's free(NULL) */
    printf("after freeTensor: weights %s, %zu elems\n", weights->host_data ? "kept" : "NULL",
           weights->num_elems);
    struct Tensor *late = filled(1, 1, 2, 2, v);
    llvm_hpvm_initTensorRt(0);
    llvm_hpvm_initApproxhpvmRt(0);
    llvm_hpvm_cleanupApproxhpvmRt();
    llvm_hpvm_cleanupTensorRt(); /* HPVM's frees nothing */
    hpvm_request_tensor(late, 0);
    hpvm_request_tensor(late, 1);
    print_tensor("after cleanupTensorRt", late);
  } else if (!strcmp(mode, "mul2d")) {
    /* x (2, 3, 1, 1) times a (3, 2) create2DTensor: the same as HPVM's (1, 1, 3, 2) */
    static const float x[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 0, 0, 1, 1, 1};
    struct Tensor *w2 = (struct Tensor *)create2DTensor(float_type, 3, 2);
    initTensorData(w2, (void *)w, sizeof w);
    print_tensor("w2", w2);
    MulIn args = {filled(2, 3, 1, 1, x), 0, w2, 0};
    __hpvm__wait(__hpvm__launch(0, mul_root, &args));
    print_tensor("x w2", (struct Tensor *)args.r.tensor);
    args.w = filled(1, 1, 3, 2, w);
    __hpvm__wait(__hpvm__launch(0, mul_root, &args));
    print_tensor("x w4", (struct Tensor *)args.r.tensor);
  } else if (!strcmp(mode, "short_batch")) {
    readInputBatch(path, float_type, 2, 5, 2, 2, 2); /* the file holds 4 images */
  } else if (!strcmp(mode, "empty_batch")) {
    readInputBatch(path, float_type, 3, 3, 2, 2, 2);
  } else if (!strcmp(mode, "missing_labels")) {
    snprintf(labels, sizeof labels, "%s/none.bin", argv[2]);
    readLabels3(labels, 2);
  } else if (!strcmp(mode, "no_labels")) {
    readLabelsBatch3(labels, 3, 3);
  } else if (!strcmp(mode, "short_labels")) {
    readLabelsBatch3(labels, 6, 10); /* the file holds 8 */
  } else if (!strcmp(mode, "accuracy_shape")) {
    computeAccuracy3(NULL, filled(1, 3, 2, 2, scores));
  } else if (!strcmp(mode, "accuracy_null")) {
    float a = computeAccuracy3(NULL, filled(4, 3, 1, 1, scores));
    printf("returned %f\n", a);
  } else if (!strcmp(mode, "controller_rows")) {
    llvm_hpvm_invokeRtControl(filled(4, 3, 1, 1, scores), labels, 0, 3);
  } else if (!strcmp(mode, "configuration")) {
    llvm_hpvm_initializeRuntimeController("tuner_confs.txt");
  } else if (!strcmp(mode, "init_size")) {
    struct Tensor *t = (struct Tensor *)create4DTensor(float_type, nchw, 1, 1, 2, 4);
    initTensorData(t, (void *)scores, 4 * sizeof(float));
  } else if (!strcmp(mode, "init_null")) {
    initTensorData(create4DTensor(float_type, nchw, 1, 1, 1, 2), NULL, 2 * sizeof(float));
  } else if (!strcmp(mode, "extents")) {
    create4DTensor(float_type, nchw, 2, 0, 1, 1);
  } else if (!strcmp(mode, "half")) {
    create4DTensor(half_type, nchw, 1, 1, 2, 2);
  } else if (!strcmp(mode, "nhwc")) {
    create4DTensor(float_type, nhwc, 1, 1, 2, 2);
  } else if (!strcmp(mode, "destination")) {
    hpvm_request_tensor(filled(1, 1, 1, 2, scores), 2);
  } else if (!strcmp(mode, "use_freed")) {
    struct Tensor *t = filled(1, 1, 1, 2, scores);
    freeTensor(t);
    relu(t);
  } else if (!strcmp(mode, "batch_freed")) {
    startMemTracking();
    struct Tensor *t = filled(1, 1, 1, 2, scores);
    freeBatchMemory();
    relu(t);
  } else if (!strcmp(mode, "2d_as_4d")) {
    relu(create2DTensor(float_type, 2, 2));
  } else {
    printf("unknown mode %s\n", mode);
    return 2;
  }
  if (strcmp(mode, "layout") && strcmp(mode, "files") && strcmp(mode, "accuracy") &&
      strcmp(mode, "controller") && strcmp(mode, "memory") && strcmp(mode, "mul2d"))
    printf("not reached\n");
  __hpvm__cleanup();
  return 0;
}
