// A ResNet basic block with its classifier, written as HPVM's DNN benchmarks write their
// models (resnet18_cifar10's src.cc): one leaf per tensor operation (layers.cpp), a root
// creating them and wiring each tensor as a (pointer, size) pair (graph.cpp), a packed
// RootIn, and a host reading every weight with readTrainedWeights (main.cpp).
#ifndef RESNET_BLOCK_H
#define RESNET_BLOCK_H

#include <cstddef>

#ifndef RESNET_BLOCK_FILTERS2  // the second convolution's filters (the shortcut adds 64)
#define RESNET_BLOCK_FILTERS2 64
#endif

#define CHANNELS 64  // the block's input and output channels
#define SIDE 16      // its images are SIDE x SIDE
#define CLASSES 10

// var_0 .. var_12: conv, + bias, batchnorm, relu; conv, + bias, batchnorm, + the shortcut,
// relu; the mean over the image, dense, + bias, softmax.
void var_0_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2);
void var_1_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2);
void var_2_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2, void *t3, size_t bytes_t3,
                void *t4, size_t bytes_t4, void *t5, size_t bytes_t5);
void var_3_node(void *t1, size_t bytes_t1);
void var_4_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2);
void var_5_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2);
void var_6_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2, void *t3, size_t bytes_t3,
                void *t4, size_t bytes_t4, void *t5, size_t bytes_t5);
void var_7_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2);
void var_8_node(void *t1, size_t bytes_t1);
void var_9_node(void *t1, size_t bytes_t1);
void var_10_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2);
void var_11_node(void *t1, size_t bytes_t1, void *t2, size_t bytes_t2);
void var_12_node(void *t1, size_t bytes_t1);

void root(void *input, size_t input_bytes,                                       //
          void *conv2d_1_w, size_t conv2d_1_w_bytes, void *conv2d_1_b, size_t conv2d_1_b_bytes,
          void *bn_1_gamma, size_t bn_1_gamma_bytes, void *bn_1_beta, size_t bn_1_beta_bytes,
          void *bn_1_mean, size_t bn_1_mean_bytes, void *bn_1_variance, size_t bn_1_variance_bytes,
          void *conv2d_2_w, size_t conv2d_2_w_bytes, void *conv2d_2_b, size_t conv2d_2_b_bytes,
          void *bn_2_gamma, size_t bn_2_gamma_bytes, void *bn_2_beta, size_t bn_2_beta_bytes,
          void *bn_2_mean, size_t bn_2_mean_bytes, void *bn_2_variance, size_t bn_2_variance_bytes,
          void *dense_1_w, size_t dense_1_w_bytes, void *dense_1_b, size_t dense_1_b_bytes);

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
  void *bn_1_gamma;
  size_t bn_1_gamma_bytes;
  void *bn_1_beta;
  size_t bn_1_beta_bytes;
  void *bn_1_mean;
  size_t bn_1_mean_bytes;
  void *bn_1_variance;
  size_t bn_1_variance_bytes;
  void *conv2d_2_w;
  size_t conv2d_2_w_bytes;
  void *conv2d_2_b;
  size_t conv2d_2_b_bytes;
  void *bn_2_gamma;
  size_t bn_2_gamma_bytes;
  void *bn_2_beta;
  size_t bn_2_beta_bytes;
  void *bn_2_mean;
  size_t bn_2_mean_bytes;
  void *bn_2_variance;
  size_t bn_2_variance_bytes;
  void *dense_1_w;
  size_t dense_1_w_bytes;
  void *dense_1_b;
  size_t dense_1_b_bytes;
  struct ret_t r;
} RootIn;

#endif
