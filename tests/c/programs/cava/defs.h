/* Shared definitions of the camera pipeline: the channel count, the camera model's sizes,
   GNU-style min/max (statement expressions, each argument evaluated once) and the casts
   that give a flat buffer [] indexing by channel, row and column. */
#ifndef CAVA_DEFS_H
#define CAVA_DEFS_H

#include <stddef.h>
#include <stdint.h>

#define CACHELINE_SIZE 64
#define CHAN_SIZE 3

/* The camera model: radial basis control points of the gamut map, the affine part's rows
   (a bias row, then one row per input channel) and the tone curve's entries. */
#define NUM_CTRL_PTS 12
#define NUM_COEF_ROWS 4
#define TONE_MAP_SIZE 256

#define max(a, b)                                                              \
  ({                                                                           \
    __typeof__(a) _hi_a = (a);                                                 \
    __typeof__(b) _hi_b = (b);                                                 \
    _hi_a > _hi_b ? _hi_a : _hi_b;                                             \
  })

#define min(a, b)                                                              \
  ({                                                                           \
    __typeof__(a) _lo_a = (a);                                                 \
    __typeof__(b) _lo_b = (b);                                                 \
    _lo_a < _lo_b ? _lo_a : _lo_b;                                             \
  })

/* A planar (channel, row, column) image as a variable-length array type, and an
   interleaved (row, column, channel) one. */
#define AS_CHW(TYPE, name, buffer, rows, cols)                                 \
  TYPE(*name)[rows][cols] = (TYPE(*)[rows][cols])(buffer)
#define AS_HWC(TYPE, name, buffer, cols)                                       \
  TYPE(*name)[cols][CHAN_SIZE] = (TYPE(*)[cols][CHAN_SIZE])(buffer)

#endif
