/*
 * lenet.cpp -- LeNet for 28 x 28 images as an HPVM-C program: the layers of HPVM's
 * lenet_mnist benchmark, written the way HPVM's DNN benchmarks are written.
 *
 * One leaf per tensor operation (var_N_node: hinted TENSOR_TARGET, one __hpvm__tensor_* call,
 * the result returned with a size of 0), a root that creates them and passes each tensor as a
 * (pointer, size) pair — edges from the previous layer, binds from the root's parameters for
 * the weights — and a packed RootIn struct. main reads every weight with readTrainedWeights,
 * then, batch by batch, the images with readInputBatch, launches the graph, reads the
 * batch's labels with readLabelsBatch3 and scores the result with computeAccuracy3, freeing
 * the batch's tensors with freeBatchMemory; dumpFinalAccuracy reports the whole run.
 *
 *   python examples/c/lenet/lenet_data.py DIR     # weights, 16 images, labels (from PyTorch)
 *   hpvm c run examples/c/lenet/lenet.cpp -- DIR [OUT]
 *
 * DIR holds the files HPVM's model_params/lenet_mnist holds (same names and layout); OUT, if
 * given, receives the probabilities of every image (float32, N x 10). Paths are built with
 * std::string, as HPVM's programs build them (tensorUtils.h brings in <string>, as HPVM's does).
 * Exit status: 0, or 1 if a result tensor is not the (batch, 10, 1, 1) one expected.
 */
#include <stdio.h>
#include <stdlib.h>

#include <hpvm.h>
#include <tensorUtils.h>

/* conv2d_1: 5x5, 32 filters, padding 2 */
void var_0_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);

  void *r = __hpvm__tensor_convolution(t1, t2, 2, 2, 1, 1);
  __hpvm__return(2, r, (size_t)0);
}

/* + conv2d_1's bias */
void var_1_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);

  void *r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_2_node(void *t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);

  void *r = __hpvm__tensor_tanh(t1);
  __hpvm__return(2, r, (size_t)0);
}

/* 2x2 max pool, stride 2: 32 x 14 x 14 */
void var_3_node(void *t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);

  void *r = __hpvm__tensor_pool_max(t1, 2, 2, 0, 0, 2, 2);
  __hpvm__return(2, r, (size_t)0);
}

/* conv2d_2: 5x5, 64 filters, padding 2 */
void var_4_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);

  void *r = __hpvm__tensor_convolution(t1, t2, 2, 2, 1, 1);
  __hpvm__return(2, r, (size_t)0);
}

void var_5_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);

  void *r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_6_node(void *t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);

  void *r = __hpvm__tensor_tanh(t1);
  __hpvm__return(2, r, (size_t)0);
}

/* 64 x 7 x 7 */
void var_7_node(void *t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);

  void *r = __hpvm__tensor_pool_max(t1, 2, 2, 0, 0, 2, 2);
  __hpvm__return(2, r, (size_t)0);
}

/* dense_1: the 3136 values of each image times (3136, 1024) */
void var_8_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);

  void *r = __hpvm__tensor_mul(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_9_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);

  void *r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_10_node(void *t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);

  void *r = __hpvm__tensor_tanh(t1);
  __hpvm__return(2, r, (size_t)0);
}

/* dense_2: (1024, 10) */
void var_11_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);

  void *r = __hpvm__tensor_mul(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_12_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);

  void *r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_13_node(void *t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);

  void *r = __hpvm__tensor_tanh(t1);
  __hpvm__return(2, r, (size_t)0);
}

/* the 10 class probabilities of each image */
void var_14_node(void *t1, size_t bytes_t1) {
  __hpvm__hint(hpvm::TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);

  void *r = __hpvm__tensor_softmax(t1);
  __hpvm__return(2, r, (size_t)0);
}

void root(void *input, size_t input_bytes, void *conv2d_1_w, size_t conv2d_1_w_bytes,
          void *conv2d_1_b, size_t conv2d_1_b_bytes, void *conv2d_2_w, size_t conv2d_2_w_bytes,
          void *conv2d_2_b, size_t conv2d_2_b_bytes, void *dense_1_w, size_t dense_1_w_bytes,
          void *dense_1_b, size_t dense_1_b_bytes, void *dense_2_w, size_t dense_2_w_bytes,
          void *dense_2_b, size_t dense_2_b_bytes) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(9, input, conv2d_1_w, conv2d_1_b, conv2d_2_w, conv2d_2_b, dense_1_w,
                     dense_1_b, dense_2_w, dense_2_b, 0);

  /* the input and conv2d_1's filters: root ports 0-3 */
  void *var_0 = __hpvm__createNodeND(0, var_0_node);
  __hpvm__bindIn(var_0, 0, 0, 0);
  __hpvm__bindIn(var_0, 1, 1, 0);
  __hpvm__bindIn(var_0, 2, 2, 0);
  __hpvm__bindIn(var_0, 3, 3, 0);

  /* each later layer: the previous one's tensor and size (ports 0, 1), and its weights */
  void *var_1 = __hpvm__createNodeND(0, var_1_node);
  __hpvm__edge(var_0, var_1, 1, 0, 0, 0);
  __hpvm__edge(var_0, var_1, 1, 1, 1, 0);
  __hpvm__bindIn(var_1, 4, 2, 0);
  __hpvm__bindIn(var_1, 5, 3, 0);

  void *var_2 = __hpvm__createNodeND(0, var_2_node);
  __hpvm__edge(var_1, var_2, 1, 0, 0, 0);
  __hpvm__edge(var_1, var_2, 1, 1, 1, 0);

  void *var_3 = __hpvm__createNodeND(0, var_3_node);
  __hpvm__edge(var_2, var_3, 1, 0, 0, 0);
  __hpvm__edge(var_2, var_3, 1, 1, 1, 0);

  void *var_4 = __hpvm__createNodeND(0, var_4_node);
  __hpvm__edge(var_3, var_4, 1, 0, 0, 0);
  __hpvm__edge(var_3, var_4, 1, 1, 1, 0);
  __hpvm__bindIn(var_4, 6, 2, 0);
  __hpvm__bindIn(var_4, 7, 3, 0);

  void *var_5 = __hpvm__createNodeND(0, var_5_node);
  __hpvm__edge(var_4, var_5, 1, 0, 0, 0);
  __hpvm__edge(var_4, var_5, 1, 1, 1, 0);
  __hpvm__bindIn(var_5, 8, 2, 0);
  __hpvm__bindIn(var_5, 9, 3, 0);

  void *var_6 = __hpvm__createNodeND(0, var_6_node);
  __hpvm__edge(var_5, var_6, 1, 0, 0, 0);
  __hpvm__edge(var_5, var_6, 1, 1, 1, 0);

  void *var_7 = __hpvm__createNodeND(0, var_7_node);
  __hpvm__edge(var_6, var_7, 1, 0, 0, 0);
  __hpvm__edge(var_6, var_7, 1, 1, 1, 0);

  void *var_8 = __hpvm__createNodeND(0, var_8_node);
  __hpvm__edge(var_7, var_8, 1, 0, 0, 0);
  __hpvm__edge(var_7, var_8, 1, 1, 1, 0);
  __hpvm__bindIn(var_8, 10, 2, 0);
  __hpvm__bindIn(var_8, 11, 3, 0);

  void *var_9 = __hpvm__createNodeND(0, var_9_node);
  __hpvm__edge(var_8, var_9, 1, 0, 0, 0);
  __hpvm__edge(var_8, var_9, 1, 1, 1, 0);
  __hpvm__bindIn(var_9, 12, 2, 0);
  __hpvm__bindIn(var_9, 13, 3, 0);

  void *var_10 = __hpvm__createNodeND(0, var_10_node);
  __hpvm__edge(var_9, var_10, 1, 0, 0, 0);
  __hpvm__edge(var_9, var_10, 1, 1, 1, 0);

  void *var_11 = __hpvm__createNodeND(0, var_11_node);
  __hpvm__edge(var_10, var_11, 1, 0, 0, 0);
  __hpvm__edge(var_10, var_11, 1, 1, 1, 0);
  __hpvm__bindIn(var_11, 14, 2, 0);
  __hpvm__bindIn(var_11, 15, 3, 0);

  void *var_12 = __hpvm__createNodeND(0, var_12_node);
  __hpvm__edge(var_11, var_12, 1, 0, 0, 0);
  __hpvm__edge(var_11, var_12, 1, 1, 1, 0);
  __hpvm__bindIn(var_12, 16, 2, 0);
  __hpvm__bindIn(var_12, 17, 3, 0);

  void *var_13 = __hpvm__createNodeND(0, var_13_node);
  __hpvm__edge(var_12, var_13, 1, 0, 0, 0);
  __hpvm__edge(var_12, var_13, 1, 1, 1, 0);

  void *var_14 = __hpvm__createNodeND(0, var_14_node);
  __hpvm__edge(var_13, var_14, 1, 0, 0, 0);
  __hpvm__edge(var_13, var_14, 1, 1, 1, 0);

  /* the probabilities, and their size, are the graph's result */
  __hpvm__bindOut(var_14, 0, 0, 0);
  __hpvm__bindOut(var_14, 1, 1, 0);
}

struct ret_t {
  void *tensor;
  size_t bytes;
};

typedef struct __attribute__((__packed__)) {
  void *input;
  size_t input_bytes;
  void *conv2d_1_w;
  size_t conv2d_1_w_bytes;
  void *conv2d_1_b;
  size_t conv2d_1_b_bytes;
  void *conv2d_2_w;
  size_t conv2d_2_w_bytes;
  void *conv2d_2_b;
  size_t conv2d_2_b_bytes;
  void *dense_1_w;
  size_t dense_1_w_bytes;
  void *dense_1_b;
  size_t dense_1_b_bytes;
  void *dense_2_w;
  size_t dense_2_w_bytes;
  void *dense_2_b;
  size_t dense_2_b_bytes;

  struct ret_t r;
} RootIn;

const int batch_size = 8, input_size = 16, batch_count = input_size / batch_size;
const int num_classes = 10;

/* A weights tensor of DIR, of the given extents. */
static void *weights(const std::string &dir, const std::string &name, long n, long c, long h, long w) {
  std::string path = dir + "/" + name;
  return readTrainedWeights(path.c_str(), float_type, n, c, h, w);
}

int main(int argc, char *argv[]) {
  if (argc < 2) {
    printf("usage: %s MODEL_DIR [OUT]\n", argv[0]);
    return 2;
  }
  std::string dir = std::string(argv[1]);
  std::string input_path = dir + "/" + std::string("test_input.bin");
  std::string labels_path = dir + "/" + std::string("test_labels.bin");

  RootIn *args = static_cast<RootIn *>(malloc(sizeof(RootIn)));
  args->input = NULL; /* each batch's, below */
  args->input_bytes = 0;
  args->conv2d_1_w = weights(dir, "conv2d_1_w.bin", 32, 1, 5, 5);
  args->conv2d_1_w_bytes = 0;
  args->conv2d_1_b = weights(dir, "conv2d_1_b.bin", 1, 32, 1, 1);
  args->conv2d_1_b_bytes = 0;
  args->conv2d_2_w = weights(dir, "conv2d_2_w.bin", 64, 32, 5, 5);
  args->conv2d_2_w_bytes = 0;
  args->conv2d_2_b = weights(dir, "conv2d_2_b.bin", 1, 64, 1, 1);
  args->conv2d_2_b_bytes = 0;
  args->dense_1_w = weights(dir, "dense_1_w.bin", 1, 1, 3136, 1024);
  args->dense_1_w_bytes = 0;
  args->dense_1_b = weights(dir, "dense_1_b.bin", 1, 1024, 1, 1);
  args->dense_1_b_bytes = 0;
  args->dense_2_w = weights(dir, "dense_2_w.bin", 1, 1, 1024, 10);
  args->dense_2_w_bytes = 0;
  args->dense_2_b = weights(dir, "dense_2_b.bin", 1, 10, 1, 1);
  args->dense_2_b_bytes = 0;

  FILE *out = argc > 2 ? fopen(argv[2], "wb") : NULL;
  int bad = 0;
  float total_accuracy = 0;

  __hpvm__init();
  startMemTracking(); /* the weights stay; each batch's tensors are freed after it */
#pragma clang loop unroll(disable)
  for (int i = 0; i < batch_count; i++) {
    int start = i * batch_size, end = start + batch_size;
    void *input = readInputBatch(input_path.c_str(), nchw, start, end, 1, 28, 28);
    args->input = input;
    args->input_bytes = 0;

    void *dfg = __hpvm__launch(0, root, (void *)args);
    __hpvm__wait(dfg);
    void *result = static_cast<RootIn *>(args)->r.tensor;
    hpvm_request_tensor(result, 0);

    struct Tensor *probabilities = static_cast<struct Tensor *>(result);
    size_t *dims = probabilities->dims.dim_sizes;
    if (probabilities->dims.num_dims != 4 || dims[0] != (size_t)batch_size ||
        dims[1] != (size_t)num_classes || dims[2] != 1 || dims[3] != 1 ||
        probabilities->num_elems != (size_t)(batch_size * num_classes) ||
        probabilities->size_in_bytes != probabilities->num_elems * sizeof(float)) {
      printf("lenet: batch %d: the result is not a (%d, %d, 1, 1) tensor\n", i, batch_size,
             num_classes);
      bad = 1;
    } else if (out) {
      fwrite(probabilities->host_data, 1, probabilities->size_in_bytes, out);
    }

    uint32_t *labels = readLabelsBatch3(labels_path.c_str(), start, end);
    float accuracy = computeAccuracy3(labels, result);
    total_accuracy += accuracy * batch_size;
    free(labels);
    freeBatchMemory();
  }
  dumpFinalAccuracy(total_accuracy / input_size);
  __hpvm__cleanup();

  if (out)
    fclose(out);
  free(args);
  return bad;
}
