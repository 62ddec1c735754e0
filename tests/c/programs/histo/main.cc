// Parboil's histo, as a host written for HPVM: `histo -i image.bin -o histo.bin [runs]`
// reads the image, checks every pixel names a bin, launches the three-stage graph `runs`
// times (each run clears the counts in the graph: the result is the same every time) and
// writes the saturated histogram. The host uses the C++ standard library (std::vector,
// std::string, <fstream>); the graph is in kernel.cc, the files' formats in image.cc.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "histo.h"
#include "hpvm.h"

int main(int argc, char **argv) {
  std::string input, output;
  int runs = 1;
  for (int k = 1; k < argc; k++) {
    std::string arg = argv[k];
    if (arg == "-i" && k + 1 < argc)
      input = argv[++k];
    else if (arg == "-o" && k + 1 < argc)
      output = argv[++k];
    else
      runs = std::atoi(argv[k]);
  }
  if (input.empty() || output.empty() || runs < 1) {
    std::fprintf(stderr, "usage: histo -i image.bin -o histo.bin [runs >= 1]\n");
    return 1;
  }
  Image image;
  std::string error;
  if (!read_image(input, image, error)) {
    std::fprintf(stderr, "histo: %s\n", error.c_str());
    return 1;
  }
  size_t bins = image.bins();
  for (size_t i = 0; i < image.pixels.size(); i++)
    if (image.pixels[i] >= bins) {
      std::fprintf(stderr, "histo: pixel %zu is %u, past the last of %zu bins\n", i, image.pixels[i], bins);
      return 1;
    }

  std::vector<int> counts(bins, -1);  // (the graph clears them)
  std::vector<unsigned char> histo(bins, 0xAB);
  size_t pixels = image.pixels.size();
  RootIn *args = (RootIn *)std::malloc(sizeof(RootIn));
  *args = RootIn{image.pixels.data(), pixels * sizeof(unsigned), counts.data(), bins * sizeof(int),
                 histo.data(), bins, (size_t)CHUNK, (pixels + CHUNK - 1) / CHUNK, bins};
  __hpvm__init();
  llvm_hpvm_track_mem(image.pixels.data(), pixels * sizeof(unsigned));
  llvm_hpvm_track_mem(counts.data(), bins * sizeof(int));
  llvm_hpvm_track_mem(histo.data(), bins);
  for (int run = 0; run < runs; run++) {
    void *dfg = __hpvm__launch(0, histo_root, (void *)args);
    __hpvm__wait(dfg);
  }
  llvm_hpvm_request_mem(histo.data(), bins);
  llvm_hpvm_untrack_mem(image.pixels.data());
  llvm_hpvm_untrack_mem(counts.data());
  llvm_hpvm_untrack_mem(histo.data());
  __hpvm__cleanup();
  std::free(args);

  if (!write_histogram(output, histo)) {
    std::fprintf(stderr, "histo: cannot write %s\n", output.c_str());
    return 1;
  }
  std::printf("histo %ux%u image, %zu bins, %d runs\n", image.width, image.height, bins, runs);
  return 0;
}
