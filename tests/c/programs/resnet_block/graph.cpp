// The block's graph: the root creates one node per leaf (layers.cpp) and wires each
// tensor as a (pointer, size) pair — edges from the previous layer into ports 0 and 1, binds
// from the root's parameters for the weights, and the root's input bound once more into the
// shortcut's add.
#include <hpvm.h>

#include "resnet_block.h"

void root(void *input, size_t input_bytes,                                       //
          void *conv2d_1_w, size_t conv2d_1_w_bytes, void *conv2d_1_b, size_t conv2d_1_b_bytes,
          void *bn_1_gamma, size_t bn_1_gamma_bytes, void *bn_1_beta, size_t bn_1_beta_bytes,
          void *bn_1_mean, size_t bn_1_mean_bytes, void *bn_1_variance, size_t bn_1_variance_bytes,
          void *conv2d_2_w, size_t conv2d_2_w_bytes, void *conv2d_2_b, size_t conv2d_2_b_bytes,
          void *bn_2_gamma, size_t bn_2_gamma_bytes, void *bn_2_beta, size_t bn_2_beta_bytes,
          void *bn_2_mean, size_t bn_2_mean_bytes, void *bn_2_variance, size_t bn_2_variance_bytes,
          void *dense_1_w, size_t dense_1_w_bytes, void *dense_1_b, size_t dense_1_b_bytes) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(15, input, conv2d_1_w, conv2d_1_b, bn_1_gamma, bn_1_beta, bn_1_mean,
                     bn_1_variance, conv2d_2_w, conv2d_2_b, bn_2_gamma, bn_2_beta, bn_2_mean,
                     bn_2_variance, dense_1_w, dense_1_b, 0);
  /* the input and conv2d_1's filters: root ports 0-3 */
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
  /* batchnorm: gamma, beta, mean, variance */
  void *var_2 = __hpvm__createNodeND(0, var_2_node);
  __hpvm__edge(var_1, var_2, 1, 0, 0, 0);
  __hpvm__edge(var_1, var_2, 1, 1, 1, 0);
  __hpvm__bindIn(var_2, 6, 2, 0);
  __hpvm__bindIn(var_2, 7, 3, 0);
  __hpvm__bindIn(var_2, 8, 4, 0);
  __hpvm__bindIn(var_2, 9, 5, 0);
  __hpvm__bindIn(var_2, 10, 6, 0);
  __hpvm__bindIn(var_2, 11, 7, 0);
  __hpvm__bindIn(var_2, 12, 8, 0);
  __hpvm__bindIn(var_2, 13, 9, 0);
  void *var_3 = __hpvm__createNodeND(0, var_3_node);
  __hpvm__edge(var_2, var_3, 1, 0, 0, 0);
  __hpvm__edge(var_2, var_3, 1, 1, 1, 0);
  void *var_4 = __hpvm__createNodeND(0, var_4_node);
  __hpvm__edge(var_3, var_4, 1, 0, 0, 0);
  __hpvm__edge(var_3, var_4, 1, 1, 1, 0);
  __hpvm__bindIn(var_4, 14, 2, 0);
  __hpvm__bindIn(var_4, 15, 3, 0);
  void *var_5 = __hpvm__createNodeND(0, var_5_node);
  __hpvm__edge(var_4, var_5, 1, 0, 0, 0);
  __hpvm__edge(var_4, var_5, 1, 1, 1, 0);
  __hpvm__bindIn(var_5, 16, 2, 0);
  __hpvm__bindIn(var_5, 17, 3, 0);
  void *var_6 = __hpvm__createNodeND(0, var_6_node);
  __hpvm__edge(var_5, var_6, 1, 0, 0, 0);
  __hpvm__edge(var_5, var_6, 1, 1, 1, 0);
  __hpvm__bindIn(var_6, 18, 2, 0);
  __hpvm__bindIn(var_6, 19, 3, 0);
  __hpvm__bindIn(var_6, 20, 4, 0);
  __hpvm__bindIn(var_6, 21, 5, 0);
  __hpvm__bindIn(var_6, 22, 6, 0);
  __hpvm__bindIn(var_6, 23, 7, 0);
  __hpvm__bindIn(var_6, 24, 8, 0);
  __hpvm__bindIn(var_6, 25, 9, 0);
  /* the shortcut: the root's input again, into ports 2 and 3 */
  void *var_7 = __hpvm__createNodeND(0, var_7_node);
  __hpvm__edge(var_6, var_7, 1, 0, 0, 0);
  __hpvm__edge(var_6, var_7, 1, 1, 1, 0);
  __hpvm__bindIn(var_7, 0, 2, 0);
  __hpvm__bindIn(var_7, 1, 3, 0);
  void *var_8 = __hpvm__createNodeND(0, var_8_node);
  __hpvm__edge(var_7, var_8, 1, 0, 0, 0);
  __hpvm__edge(var_7, var_8, 1, 1, 1, 0);
  void *var_9 = __hpvm__createNodeND(0, var_9_node);
  __hpvm__edge(var_8, var_9, 1, 0, 0, 0);
  __hpvm__edge(var_8, var_9, 1, 1, 1, 0);
  /* dense_1: (1, 1, CHANNELS, CLASSES) */
  void *var_10 = __hpvm__createNodeND(0, var_10_node);
  __hpvm__edge(var_9, var_10, 1, 0, 0, 0);
  __hpvm__edge(var_9, var_10, 1, 1, 1, 0);
  __hpvm__bindIn(var_10, 26, 2, 0);
  __hpvm__bindIn(var_10, 27, 3, 0);
  void *var_11 = __hpvm__createNodeND(0, var_11_node);
  __hpvm__edge(var_10, var_11, 1, 0, 0, 0);
  __hpvm__edge(var_10, var_11, 1, 1, 1, 0);
  __hpvm__bindIn(var_11, 28, 2, 0);
  __hpvm__bindIn(var_11, 29, 3, 0);
  void *var_12 = __hpvm__createNodeND(0, var_12_node);
  __hpvm__edge(var_11, var_12, 1, 0, 0, 0);
  __hpvm__edge(var_11, var_12, 1, 1, 1, 0);
  /* the probabilities, and their size, are the graph's result */
  __hpvm__bindOut(var_12, 0, 0, 0);
  __hpvm__bindOut(var_12, 1, 1, 0);
}
