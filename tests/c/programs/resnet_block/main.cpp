// The host: every weight read with readTrainedWeights from DIR (file names and extents in
// one std::vector, as a model's table of layers), the images batch by batch with
// readInputBatch, one __hpvm__launch + __hpvm__wait per batch over the same RootIn, each
// result requested and its probabilities written to OUT.
//
//   resnet_block DIR OUT     (DIR: the .bin files the test writes)
//
// Exit status: 0, 1 if a result is not a (batch, CLASSES, 1, 1) tensor, 2 for a bad
// command line.
#include <stdio.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include <hpvm.h>
#include <tensorUtils.h>

#include "resnet_block.h"

namespace {

const int batch_size = 2, input_size = 4, batch_count = input_size / batch_size;

struct WeightFile {
  std::string name;
  long n, c, h, w;
};

// The weights in RootIn's order after the input.
const std::vector<WeightFile> kWeights = {
    {"conv2d_1_w.bin", CHANNELS, CHANNELS, 3, 3},
    {"conv2d_1_b.bin", 1, CHANNELS, 1, 1},
    {"bn_1_gamma.bin", 1, CHANNELS, 1, 1},
    {"bn_1_beta.bin", 1, CHANNELS, 1, 1},
    {"bn_1_mean.bin", 1, CHANNELS, 1, 1},
    {"bn_1_variance.bin", 1, CHANNELS, 1, 1},
    {"conv2d_2_w.bin", RESNET_BLOCK_FILTERS2, CHANNELS, 3, 3},
    {"conv2d_2_b.bin", 1, RESNET_BLOCK_FILTERS2, 1, 1},
    {"bn_2_gamma.bin", 1, RESNET_BLOCK_FILTERS2, 1, 1},
    {"bn_2_beta.bin", 1, RESNET_BLOCK_FILTERS2, 1, 1},
    {"bn_2_mean.bin", 1, RESNET_BLOCK_FILTERS2, 1, 1},
    {"bn_2_variance.bin", 1, RESNET_BLOCK_FILTERS2, 1, 1},
    {"dense_1_w.bin", 1, 1, CHANNELS, CLASSES},
    {"dense_1_b.bin", 1, CLASSES, 1, 1},
};

}  // namespace

int main(int argc, char *argv[]) {
  if (argc < 3) {
    printf("usage: %s MODEL_DIR OUT\n", argv[0]);
    return 2;
  }
  std::string dir = std::string(argv[1]);
  std::string input_path = dir + "/" + std::string("test_input.bin");
  RootIn *args = static_cast<RootIn *>(malloc(sizeof(RootIn)));
  args->input = NULL; /* each batch's, below */
  args->input_bytes = 0;
  std::vector<void *> w; /* kWeights' tensors, in order */
  for (const WeightFile &f : kWeights) {
    std::string path = dir + "/" + f.name;
    w.push_back(readTrainedWeights(path.c_str(), float_type, f.n, f.c, f.h, f.w));
  }
  args->conv2d_1_w = w[0];
  args->conv2d_1_w_bytes = 0;
  args->conv2d_1_b = w[1];
  args->conv2d_1_b_bytes = 0;
  args->bn_1_gamma = w[2];
  args->bn_1_gamma_bytes = 0;
  args->bn_1_beta = w[3];
  args->bn_1_beta_bytes = 0;
  args->bn_1_mean = w[4];
  args->bn_1_mean_bytes = 0;
  args->bn_1_variance = w[5];
  args->bn_1_variance_bytes = 0;
  args->conv2d_2_w = w[6];
  args->conv2d_2_w_bytes = 0;
  args->conv2d_2_b = w[7];
  args->conv2d_2_b_bytes = 0;
  args->bn_2_gamma = w[8];
  args->bn_2_gamma_bytes = 0;
  args->bn_2_beta = w[9];
  args->bn_2_beta_bytes = 0;
  args->bn_2_mean = w[10];
  args->bn_2_mean_bytes = 0;
  args->bn_2_variance = w[11];
  args->bn_2_variance_bytes = 0;
  args->dense_1_w = w[12];
  args->dense_1_w_bytes = 0;
  args->dense_1_b = w[13];
  args->dense_1_b_bytes = 0;
  FILE *out = fopen(argv[2], "wb");
  int bad = 0;
  __hpvm__init();
  startMemTracking(); /* the weights stay; each batch's tensors are freed after it */
  for (int i = 0; i < batch_count; i++) {
    int start = i * batch_size, end = start + batch_size;
    args->input = readInputBatch(input_path.c_str(), nchw, start, end, CHANNELS, SIDE, SIDE);
    args->input_bytes = 0;
    void *dfg = __hpvm__launch(0, root, (void *)args);
    __hpvm__wait(dfg);
    void *result = static_cast<RootIn *>(args)->r.tensor;
    hpvm_request_tensor(result, 0);
    struct Tensor *probabilities = static_cast<struct Tensor *>(result);
    size_t *dims = probabilities->dims.dim_sizes;
    if (probabilities->dims.num_dims != 4 || dims[0] != (size_t)batch_size || dims[1] != CLASSES ||
        dims[2] != 1 || dims[3] != 1) {
      printf("resnet_block: batch %d: the result is not a (%d, %d, 1, 1) tensor\n", i, batch_size, CLASSES);
      bad = 1;
    } else {
      fwrite(probabilities->host_data, 1, probabilities->size_in_bytes, out);
    }
    freeBatchMemory();
  }
  printf("resnet_block: %d images, %d batches\n", input_size, batch_count);
  __hpvm__cleanup();
  fclose(out);
  free(args);
  return bad;
}
