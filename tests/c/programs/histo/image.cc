// Parboil's histo files: the input image (four 32-bit header words, then the pixels) and
// the output histogram (one byte per bin), read and written with the standard library.
#include <cstdint>
#include <fstream>

#include "histo.h"

bool read_image(const std::string &path, Image &image, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open " + path;
    return false;
  }
  uint32_t header[4];
  if (!in.read(reinterpret_cast<char *>(header), sizeof header)) {
    error = path + ": shorter than its 16-byte header";
    return false;
  }
  image.width = header[0];
  image.height = header[1];
  image.histo_width = header[2];
  image.histo_height = header[3];
  image.pixels.resize((size_t)image.width * image.height);
  std::streamsize bytes = (std::streamsize)(image.pixels.size() * sizeof(unsigned));
  if (!in.read(reinterpret_cast<char *>(image.pixels.data()), bytes)) {
    error = path + ": fewer pixels than its " + std::to_string(image.width) + "x" + std::to_string(image.height) +
            " header says";
    return false;
  }
  return true;
}

bool write_histogram(const std::string &path, const std::vector<unsigned char> &histo) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(histo.data()), (std::streamsize)histo.size());
  return (bool)out;
}
