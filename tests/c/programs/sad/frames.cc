// Parboil's sad files: the frames (a 16-bit width and height, then 16-bit pixels, all
// little-endian) and the SADs written for checking, read and written with the standard
// library. The bytes are put together one by one, as parboil's read16u does: the files
// mean the same on any host.
#include <cstdint>
#include <fstream>

#include "sad.h"

// The next little-endian 16-bit word of `in`; false at the end of the file.
static bool read16u(std::ifstream &in, unsigned &value) {
  unsigned char bytes[2];
  if (!in.read(reinterpret_cast<char *>(bytes), 2)) return false;
  value = bytes[0] | (unsigned)bytes[1] << 8;
  return true;
}

static void write16u(std::ofstream &out, unsigned value) {
  char bytes[2] = {(char)(value & 0xff), (char)(value >> 8 & 0xff)};
  out.write(bytes, 2);
}

static void write32u(std::ofstream &out, unsigned long value) {
  write16u(out, (unsigned)(value & 0xffff));
  write16u(out, (unsigned)(value >> 16 & 0xffff));
}

bool read_frame(const std::string &path, Frame &frame, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open " + path;
    return false;
  }
  if (!read16u(in, frame.width) || !read16u(in, frame.height)) {
    error = path + ": shorter than its 4-byte header";
    return false;
  }
  frame.pixels.resize((size_t)frame.width * frame.height);
  for (size_t i = 0; i < frame.pixels.size(); i++) {
    unsigned pixel;
    if (!read16u(in, pixel)) {
      error = path + ": " + std::to_string(i) + " pixels, fewer than its " + std::to_string(frame.width) + "x" +
              std::to_string(frame.height) + " header says";
      return false;
    }
    if (pixel > 255) {
      error = path + ": pixel (" + std::to_string(i % frame.width) + ", " + std::to_string(i / frame.width) +
              ") is " + std::to_string(pixel) + ", past 255 (a 16x16 SAD of 8-bit pixels fits 16 bits)";
      return false;
    }
    frame.pixels[i] = (unsigned short)pixel;
  }
  return true;
}

// The blocks of each shape per macroblock and where the shape's region starts (sad.h).
static const long COUNT[7] = {1, 2, 2, 4, 8, 8, 16};
static const long AT[7] = {SAD_16X16_AT, SAD_16X8_AT, SAD_8X16_AT, SAD_8X8_AT, SAD_8X4_AT, SAD_4X8_AT, SAD_4X4_AT};

bool write_sads(const std::string &path, long mb_width, long mb_height, long positions,
                const std::vector<unsigned short> &sads) {
  std::ofstream out(path, std::ios::binary);
  long mbs = mb_width * mb_height;
  write32u(out, (unsigned long)mbs);
  write32u(out, (unsigned long)positions);
  for (long mb = 0; mb < mbs; mb++)
    for (int type = 0; type < 7; type++)
      for (long block = 0; block < COUNT[type]; block++) {
        size_t start = (size_t)((AT[type] * mbs + mb * COUNT[type] + block) * positions);
        for (long pos = 0; pos < positions; pos++) write16u(out, sads[start + pos]);
      }
  return (bool)out;
}
