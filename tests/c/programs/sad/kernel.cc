// The SADs' graph: an internal root and three leaves in a row, joined by all-to-all edges
// that carry the SAD array's size (what orders them: a node starts when every instance of the
// one before has returned), each replicated 2-D over the frame in the GPU convention (x the
// fastest index, the column). `sad_4x4` compares one 4x4 block of the current frame (copied
// into a local array, as parboil's mb_sad_calc copies it into shared memory) with the
// reference at every search position; a displacement past the frame's edge reads the edge's
// pixel (parboil reads the reference through a texture that clamps its coordinates).
// `sad_8x8` sums one 8x8 quarter of a macroblock's 4x4 SADs into its 8x8, 8x4 and 4x8 SADs
// (parboil's larger_sad_calc_8), `sad_16x16` a macroblock's 8x8 SADs into its 16x16, 16x8
// and 8x16 ones (larger_sad_calc_16).
#include "hpvm.h"
#include "sad.h"

// `v` moved into 0 .. last: the reference pixel a coordinate past the frame reads.
static inline long clamped(long v, long last) { return v < 0 ? 0 : (v > last ? last : v); }

void sad_4x4(unsigned short *ref, size_t bytes_ref, unsigned short *cur, size_t bytes_cur, unsigned short *sads,
             size_t bytes_sads, long width, long height, long range) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(3, ref, cur, sads, 1, sads);
  void *self = __hpvm__getNode();
  long bx = __hpvm__getNodeInstanceID_x(self);
  long by = __hpvm__getNodeInstanceID_y(self);
  long x0 = bx * BLOCK_SIZE, y0 = by * BLOCK_SIZE;
  unsigned short block[BLOCK_SIZE * BLOCK_SIZE];
  for (int p = 0; p < BLOCK_SIZE * BLOCK_SIZE; p++)
    block[p] = cur[(y0 + p / BLOCK_SIZE) * width + x0 + p % BLOCK_SIZE];
  long side = 2 * range + 1, positions = side * side;
  long mb_width = width / MB_SIZE, mbs = mb_width * (height / MB_SIZE);
  long mb = (by / 4) * mb_width + bx / 4, sub = (by % 4) * 4 + bx % 4;
  long out = (SAD_4X4_AT * mbs + mb * 16 + sub) * positions;
  for (long pos = 0; pos < positions; pos++) {
    long dy = pos / side - range, dx = pos % side - range;
    unsigned sad = 0;
    for (int y = 0; y < BLOCK_SIZE; y++) {
      long row = clamped(y0 + y + dy, height - 1) * width;
      for (int x = 0; x < BLOCK_SIZE; x++) {
        int d = (int)ref[row + clamped(x0 + x + dx, width - 1)] - (int)block[y * BLOCK_SIZE + x];
        sad += (unsigned)(d < 0 ? -d : d);
      }
    }
    sads[out + pos] = (unsigned short)sad;
  }
  __hpvm__return(1, bytes_sads);
}

void sad_8x8(unsigned short *sads, size_t bytes_sads, long width, long height, long range) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(1, sads, 1, sads);
  void *self = __hpvm__getNode();
  long qx = __hpvm__getNodeInstanceID_x(self);
  long qy = __hpvm__getNodeInstanceID_y(self);
  long mb_width = width / MB_SIZE, mbs = mb_width * (height / MB_SIZE);
  long tx = qx % 2, ty = qy % 2, mb = (qy / 2) * mb_width + qx / 2;
  long side = 2 * range + 1, positions = side * side;
  // the quarter's four 4x4 blocks (i00 i01 / i10 i11) and where its sums go
  long in = (SAD_4X4_AT * mbs + mb * 16 + ty * 8 + tx * 2) * positions;
  long at_8x8 = (SAD_8X8_AT * mbs + mb * 4 + ty * 2 + tx) * positions;
  long at_8x4 = (SAD_8X4_AT * mbs + mb * 8 + ty * 4 + tx) * positions;  // and one row of 8x4 below
  long at_4x8 = (SAD_4X8_AT * mbs + mb * 8 + ty * 4 + tx * 2) * positions;  // and its right neighbour
  for (long pos = 0; pos < positions; pos++) {
    unsigned i00 = sads[in + pos], i01 = sads[in + positions + pos];
    unsigned i10 = sads[in + 4 * positions + pos], i11 = sads[in + 5 * positions + pos];
    sads[at_8x4 + pos] = (unsigned short)(i00 + i01);
    sads[at_8x4 + 2 * positions + pos] = (unsigned short)(i10 + i11);
    sads[at_4x8 + pos] = (unsigned short)(i00 + i10);
    sads[at_4x8 + positions + pos] = (unsigned short)(i01 + i11);
    sads[at_8x8 + pos] = (unsigned short)(i00 + i01 + i10 + i11);
  }
  __hpvm__return(1, bytes_sads);
}

void sad_16x16(unsigned short *sads, size_t bytes_sads, long width, long height, long range) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(1, sads, 1, sads);
  void *self = __hpvm__getNode();
  long mb_width = width / MB_SIZE, mbs = mb_width * (height / MB_SIZE);
  long mb = __hpvm__getNodeInstanceID_y(self) * mb_width + __hpvm__getNodeInstanceID_x(self);
  long side = 2 * range + 1, positions = side * side;
  long in = (SAD_8X8_AT * mbs + mb * 4) * positions;
  long at_16x8 = (SAD_16X8_AT * mbs + mb * 2) * positions;
  long at_8x16 = (SAD_8X16_AT * mbs + mb * 2) * positions;
  long at_16x16 = (SAD_16X16_AT * mbs + mb) * positions;
  for (long pos = 0; pos < positions; pos++) {
    unsigned i00 = sads[in + pos], i01 = sads[in + positions + pos];
    unsigned i10 = sads[in + 2 * positions + pos], i11 = sads[in + 3 * positions + pos];
    sads[at_16x8 + pos] = (unsigned short)(i00 + i01);
    sads[at_16x8 + positions + pos] = (unsigned short)(i10 + i11);
    sads[at_8x16 + pos] = (unsigned short)(i00 + i10);
    sads[at_8x16 + positions + pos] = (unsigned short)(i01 + i11);
    sads[at_16x16 + pos] = (unsigned short)(i00 + i01 + i10 + i11);
  }
  __hpvm__return(1, bytes_sads);
}

void sad_root(unsigned short *ref, size_t bytes_ref, unsigned short *cur, size_t bytes_cur, unsigned short *sads,
              size_t bytes_sads, long width, long height, long range) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, ref, cur, sads, 1, sads);
  void *four = __hpvm__createNodeND(2, sad_4x4, width / BLOCK_SIZE, height / BLOCK_SIZE);
  void *eight = __hpvm__createNodeND(2, sad_8x8, width / 8, height / 8);
  void *sixteen = __hpvm__createNodeND(2, sad_16x16, width / MB_SIZE, height / MB_SIZE);
  for (int p = 0; p < 9; p++) __hpvm__bindIn(four, p, p, 0);  // the frames, the SADs, the sizes
  __hpvm__bindIn(eight, 4, 0, 0);                             // sads, its size from the 4x4 SADs:
  __hpvm__edge(four, eight, 1, 0, 1, 0);                      // after every one of them
  __hpvm__bindIn(sixteen, 4, 0, 0);                           // sads, its size from the 8x8 SADs
  __hpvm__edge(eight, sixteen, 1, 0, 1, 0);
  for (int p = 6; p < 9; p++) __hpvm__bindIn(eight, p, p - 4, 0);  // width, height, range
  for (int p = 6; p < 9; p++) __hpvm__bindIn(sixteen, p, p - 4, 0);
}
