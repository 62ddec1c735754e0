// Parboil's sad, as a host written for HPVM: `sad -i ref.bin,cur.bin -o sads.bin [-r range]`
// reads the reference and the current frame (frames.cc), launches the graph once
// (kernel.cc) and writes every block's SAD at every search position, for the seven block
// shapes from 16x16 down to 4x4. Parboil searches 16 pixels each way; `-r` asks for fewer.
// The host uses the C++ standard library (std::vector, std::string).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hpvm.h"
#include "sad.h"

int main(int argc, char **argv) {
  std::string inputs, output;
  long range = SEARCH_RANGE;
  bool ok = argc % 2 == 1;  // (flags and their values in pairs)
  for (int k = 1; ok && k + 1 < argc; k += 2) {
    std::string flag = argv[k], value = argv[k + 1];
    if (flag == "-i") inputs = value;
    else if (flag == "-o") output = value;
    else if (flag == "-r") {
      char *end;
      range = std::strtol(value.c_str(), &end, 10);
      ok = !value.empty() && *end == '\0';
    } else ok = false;
  }
  size_t comma = inputs.find(',');
  if (!ok || comma == std::string::npos || output.empty() || range < 0 || range > SEARCH_RANGE) {
    std::fprintf(stderr, "usage: sad -i ref.bin,cur.bin -o sads.bin [-r range 0..%d]\n", SEARCH_RANGE);
    return 1;
  }
  Frame ref, cur;
  std::string error;
  if (!read_frame(inputs.substr(0, comma), ref, error) || !read_frame(inputs.substr(comma + 1), cur, error)) {
    std::fprintf(stderr, "sad: %s\n", error.c_str());
    return 1;
  }
  if (ref.width != cur.width || ref.height != cur.height) {
    std::fprintf(stderr, "sad: the reference frame is %ux%u, the current frame %ux%u: they must be the same size\n",
                 ref.width, ref.height, cur.width, cur.height);
    return 1;
  }
  if (ref.width % MB_SIZE || ref.height % MB_SIZE || ref.width == 0 || ref.height == 0) {
    std::fprintf(stderr, "sad: the frames are %ux%u, not a whole number of 16x16 macroblocks\n", ref.width,
                 ref.height);
    return 1;
  }
  long width = ref.width, height = ref.height;
  long mb_width = width / MB_SIZE, mb_height = height / MB_SIZE;
  long positions = (2 * range + 1) * (2 * range + 1);
  size_t pixels = ref.pixels.size(), count = (size_t)(SAD_BLOCKS * mb_width * mb_height * positions);
  std::vector<unsigned short> sads(count, 0xABCD);  // (the graph writes every one)

  RootIn *args = (RootIn *)std::malloc(sizeof(RootIn));
  *args = RootIn{ref.pixels.data(), pixels * sizeof(unsigned short), cur.pixels.data(),
                 pixels * sizeof(unsigned short), sads.data(), count * sizeof(unsigned short), width, height, range};
  __hpvm__init();
  llvm_hpvm_track_mem(ref.pixels.data(), pixels * sizeof(unsigned short));
  llvm_hpvm_track_mem(cur.pixels.data(), pixels * sizeof(unsigned short));
  llvm_hpvm_track_mem(sads.data(), count * sizeof(unsigned short));
  void *dfg = __hpvm__launch(0, sad_root, (void *)args);
  __hpvm__wait(dfg);
  llvm_hpvm_request_mem(sads.data(), count * sizeof(unsigned short));
  llvm_hpvm_untrack_mem(ref.pixels.data());
  llvm_hpvm_untrack_mem(cur.pixels.data());
  llvm_hpvm_untrack_mem(sads.data());
  __hpvm__cleanup();
  std::free(args);

  if (!write_sads(output, mb_width, mb_height, positions, sads)) {
    std::fprintf(stderr, "sad: cannot write %s\n", output.c_str());
    return 1;
  }
  std::printf("sad %ldx%ld frames, %ld macroblocks, search range %ld: %ld positions\n", width, height,
              mb_width * mb_height, range, positions);
  return 0;
}
