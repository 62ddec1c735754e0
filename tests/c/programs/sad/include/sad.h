// The motion-estimation SADs' shared declarations (parboil's sad shape, written for hpvm's
// HPVM-C front end): the frames as the input files hold them, where each block shape's SADs
// lie in the one array the three leaves share, the root's argument struct and the root node
// function main.cc launches.
#ifndef SAD_H
#define SAD_H

#include <cstddef>
#include <string>
#include <vector>

// parboil's search range: a block is compared at every displacement (dx, dy) with
// -SEARCH_RANGE <= dx, dy <= SEARCH_RANGE (`-r` asks for a smaller one). The search
// position of (dx, dy) is (dy + r) * (2r + 1) + (dx + r): dx the fastest.
#define SEARCH_RANGE 16
// A macroblock is 16x16 pixels, the smallest block 4x4: 16 of them per macroblock.
#define MB_SIZE 16
#define BLOCK_SIZE 4
// The blocks of one macroblock over all seven shapes: 1 + 2 + 2 + 4 + 8 + 8 + 16.
#define SAD_BLOCKS 41

// Where each shape's SADs start, in blocks per macroblock, in parboil's type order: type 1
// 16x16 (1 block), 2 16x8 (2, top then bottom), 3 8x16 (2, left then right), 4 8x8 (4),
// 5 8x4 (8), 6 4x8 (8), 7 4x4 (16). A shape's region holds every macroblock's blocks
// (row-major within the macroblock, shape width x height) one after the other, each block
// its SADs at every search position: element ((AT * mbs + mb * COUNT + block) * positions
// + position), mbs the frame's macroblocks.
#define SAD_16X16_AT 0
#define SAD_16X8_AT 1
#define SAD_8X16_AT 3
#define SAD_8X8_AT 5
#define SAD_8X4_AT 9
#define SAD_4X8_AT 17
#define SAD_4X4_AT 25

// A frame as parboil's sad reads it: width and height (16-bit, little-endian), then
// width * height 16-bit pixels, row by row, each an 8-bit value (below 256: a 16x16 SAD then
// fits the 16 bits parboil keeps it in).
struct Frame {
  unsigned width = 0, height = 0;
  std::vector<unsigned short> pixels;
};

// The frame in the file at `path`; false with `error` set if it cannot be read, is shorter
// than its header says, or holds a pixel past 255.
bool read_frame(const std::string &path, Frame &frame, std::string &error);
// The output: the macroblock count and the search positions (32-bit), then per macroblock
// (row-major) the seven shapes in type order, per block its SAD at every position (16-bit).
bool write_sads(const std::string &path, long mb_width, long mb_height, long positions,
                const std::vector<unsigned short> &sads);

typedef struct __attribute__((__packed__)) {
  unsigned short *ref;
  size_t bytes_ref;
  unsigned short *cur;
  size_t bytes_cur;
  unsigned short *sads;
  size_t bytes_sads;
  long width, height;  // pixels, multiples of MB_SIZE
  long range;          // the search range, 0 .. SEARCH_RANGE
} RootIn;

void sad_root(unsigned short *ref, size_t bytes_ref, unsigned short *cur, size_t bytes_cur, unsigned short *sads,
              size_t bytes_sads, long width, long height, long range);

#endif
