/*
 * tensor_pipeline.c -- a tensor graph in HPVM-C, written as HPVM's DNN benchmarks write
 * theirs: one leaf per tensor operation (convolution -> add bias -> relu -> max pool, then
 * a fully connected layer: mul -> add bias -> softmax), hinted TENSOR_TARGET, joined by
 * edges; the host makes tensors with HPVM's tensor runtime API and checks the result
 * against plain C loops.
 *
 *   hpvm c run examples/c/tensor_pipeline.c                 # weights computed by main
 *   hpvm c run examples/c/tensor_pipeline.c -- DIR [OUT]    # weights read from DIR/*.bin,
 *                                                           # the result written to OUT
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpvm.h"
#include "tensor_runtime.h"

enum { N = 2, C = 3, H = 8, W = 8, K = 4, R = 3 }; /* K filters of C x R x R, pad 1 */
enum { PH = H / 2, PW = W / 2 };                   /* after a 2x2 max pool, stride 2 */
enum { F = K * PH * PW, M = 10 };                  /* the dense layer: F inputs, M classes */

void var_0_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  void *r = __hpvm__tensor_convolution(t1, t2, 1, 1, 1, 1);
  __hpvm__return(2, r, (size_t)0);
}

void var_1_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  void *r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_2_node(void *t1, size_t bytes_t1) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);
  void *r = __hpvm__tensor_relu(t1);
  __hpvm__return(2, r, (size_t)0);
}

void var_3_node(void *t1, size_t bytes_t1) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);
  void *r = __hpvm__tensor_pool_max(t1, 2, 2, 0, 0, 2, 2);
  __hpvm__return(2, r, (size_t)0);
}

void var_4_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  void *r = __hpvm__tensor_mul(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_5_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(2, t1, t2, 0);
  void *r = __hpvm__tensor_add(t1, t2);
  __hpvm__return(2, r, (size_t)0);
}

void var_6_node(void *t1, size_t bytes_t1) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(1, t1, 0);
  void *r = __hpvm__tensor_softmax(t1);
  __hpvm__return(2, r, (size_t)0);
}

void root(void *input, size_t input_bytes, void *conv2d_1_w, size_t conv2d_1_w_bytes,
          void *conv2d_1_b, size_t conv2d_1_b_bytes, void *dense_1_w, size_t dense_1_w_bytes,
          void *dense_1_b, size_t dense_1_b_bytes) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(5, input, conv2d_1_w, conv2d_1_b, dense_1_w, dense_1_b, 0);

  void *var_0 = __hpvm__createNodeND(0, var_0_node);
  __hpvm__bindIn(var_0, 0, 0, 0);
  __hpvm__bindIn(var_0, 1, 1, 0);
  __hpvm__bindIn(var_0, 2, 2, 0);
  __hpvm__bindIn(var_0, 3, 3, 0);

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

  __hpvm__bindOut(var_6, 0, 0, 0);
  __hpvm__bindOut(var_6, 1, 1, 0);
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
  void *dense_1_w;
  size_t dense_1_w_bytes;
  void *dense_1_b;
  size_t dense_1_b_bytes;
  struct ret_t r;
} RootIn;

/* A tensor filled with a deterministic pattern (when no weights directory is given). */
static void *pattern(size_t n, size_t c, size_t h, size_t w, int seed) {
  struct Tensor *t = create4DTensor(float_type, nchw, n, c, h, w);
  float *d = (float *)t->host_data;
  for (size_t i = 0; i < t->num_elems; i++)
    d[i] = (float)((int)((i * 37 + seed * 11) % 17) - 8) / 8.0f;
  return t;
}

static void *load(const char *dir, const char *name, long n, long c, long h, long w) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return readTrainedWeights(path, float_type, n, c, h, w);
}

/* The same network as plain C loops: conv (pad 1, stride 1) + bias, relu, 2x2 max pool;
 * dense (the pooled (K, PH, PW) of each image flattened to F values) + bias, softmax. */
static void reference(const float *x, const float *wt, const float *b, const float *dw,
                      const float *db, float *out) {
  static float act[N][K][H][W], pool[N][F];
  for (int n = 0; n < N; n++)
    for (int k = 0; k < K; k++)
      for (int i = 0; i < H; i++)
        for (int j = 0; j < W; j++) {
          float s = 0.0f;
          for (int c = 0; c < C; c++)
            for (int u = 0; u < R; u++)
              for (int v = 0; v < R; v++) {
                int y = i + u - 1, z = j + v - 1;
                if (y >= 0 && y < H && z >= 0 && z < W)
                  s += x[((n * C + c) * H + y) * W + z] * wt[((k * C + c) * R + u) * R + v];
              }
          s += b[k];
          act[n][k][i][j] = s > 0.0f ? s : 0.0f;
        }
  for (int n = 0; n < N; n++)
    for (int k = 0; k < K; k++)
      for (int i = 0; i < PH; i++)
        for (int j = 0; j < PW; j++) {
          float m = act[n][k][2 * i][2 * j];
          for (int u = 0; u < 2; u++)
            for (int v = 0; v < 2; v++)
              if (act[n][k][2 * i + u][2 * j + v] > m) m = act[n][k][2 * i + u][2 * j + v];
          pool[n][(k * PH + i) * PW + j] = m;
        }
  for (int n = 0; n < N; n++) {
    float z[M], top = -INFINITY, sum = 0.0f;
    for (int j = 0; j < M; j++) {
      z[j] = db[j];
      for (int f = 0; f < F; f++) z[j] += pool[n][f] * dw[f * M + j];
      if (z[j] > top) top = z[j];
    }
    for (int j = 0; j < M; j++) sum += (z[j] = expf(z[j] - top));
    for (int j = 0; j < M; j++) out[n * M + j] = z[j] / sum;
  }
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : NULL;
  __hpvm__init();
  llvm_hpvm_initTensorRt(0);
  void *input = dir ? load(dir, "input.bin", N, C, H, W) : pattern(N, C, H, W, 1);
  void *conv2d_1_w = dir ? load(dir, "conv2d_1_w.bin", K, C, R, R) : pattern(K, C, R, R, 2);
  void *conv2d_1_b = dir ? load(dir, "conv2d_1_b.bin", 1, K, 1, 1) : pattern(1, K, 1, 1, 3);
  void *dense_1_w = dir ? load(dir, "dense_1_w.bin", 1, 1, F, M) : pattern(1, 1, F, M, 4);
  void *dense_1_b = dir ? load(dir, "dense_1_b.bin", 1, M, 1, 1) : pattern(1, M, 1, 1, 5);

  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  args->input = input;
  args->input_bytes = 0;
  args->conv2d_1_w = conv2d_1_w;
  args->conv2d_1_w_bytes = 0;
  args->conv2d_1_b = conv2d_1_b;
  args->conv2d_1_b_bytes = 0;
  args->dense_1_w = dense_1_w;
  args->dense_1_w_bytes = 0;
  args->dense_1_b = dense_1_b;
  args->dense_1_b_bytes = 0;

  void *dfg = __hpvm__launch(0, root, (void *)args);
  __hpvm__wait(dfg);
  struct Tensor *result = (struct Tensor *)args->r.tensor;
  hpvm_request_tensor(result, 0);

  int bad = 0;
  size_t *d = result->dims.dim_sizes;
  if (result->dims.num_dims != 4 || d[0] != N || d[1] != M || d[2] != 1 || d[3] != 1) {
    printf("tensor_pipeline: result has the wrong shape\n");
    bad = 1;
  } else {
    float want[N * M];
    reference(((struct Tensor *)input)->host_data, ((struct Tensor *)conv2d_1_w)->host_data,
              ((struct Tensor *)conv2d_1_b)->host_data, ((struct Tensor *)dense_1_w)->host_data,
              ((struct Tensor *)dense_1_b)->host_data, want);
    const float *got = (const float *)result->host_data;
    for (size_t i = 0; i < result->num_elems; i++)
      if (fabsf(got[i] - want[i]) > 1e-4f * (1.0f + fabsf(want[i]))) bad++;
    printf("tensor_pipeline: %zu outputs, %d wrong\n", result->num_elems, bad);
  }
  if (argc > 2) {
    FILE *f = fopen(argv[2], "wb");
    if (f) {
      fwrite(result->host_data, sizeof(float), result->num_elems, f);
      fclose(f);
    }
  }
  free(args);
  llvm_hpvm_cleanupTensorRt();
  __hpvm__cleanup();
  return bad != 0;
}
