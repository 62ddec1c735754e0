// The histogram program's shared declarations (parboil's histo shape, written for hpvm's
// HPVM-C front end): the input and output files' layout, the root's argument struct and the
// root node function main.cc launches.
#ifndef HISTO_H
#define HISTO_H

#include <cstddef>
#include <string>
#include <vector>

// Pixels one instance of the counting leaf takes (the last instance takes what is left).
#define CHUNK 256

// An image as parboil's histo input file holds it: four 32-bit words (the image's width and
// height, the histogram's width and height), then width * height 32-bit pixels, each the
// index of its bin (below histo_width * histo_height).
struct Image {
  unsigned width = 0, height = 0, histo_width = 0, histo_height = 0;
  std::vector<unsigned> pixels;
  size_t bins() const { return (size_t)histo_width * histo_height; }
};

// The image in the file at `path`; false with `error` set if it cannot be read or is not one.
bool read_image(const std::string &path, Image &image, std::string &error);
// The saturated bins, one byte each, as parboil's output file holds them.
bool write_histogram(const std::string &path, const std::vector<unsigned char> &histo);

typedef struct __attribute__((__packed__)) {
  unsigned *img;
  size_t bytes_img;
  int *counts;
  size_t bytes_counts;
  unsigned char *histo;
  size_t bytes_histo;
  size_t chunk;   // pixels per counting instance
  size_t blocks;  // counting instances
  size_t bins;    // clearing and saturating instances
} RootIn;

void histo_root(unsigned *img, size_t bytes_img, int *counts, size_t bytes_counts, unsigned char *histo,
                size_t bytes_histo, size_t chunk, size_t blocks, size_t bins);

#endif
