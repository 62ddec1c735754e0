/* A camera vision pipeline (CAVA's image signal processor) written as HPVM's hpvm-cava
   benchmark is: the raw sensor image goes through seven stages -- scale to [0, 1],
   demosaic the Bayer mosaic, denoise with a 3x3 median, transform the colours by the camera
   model's matrix, map the gamut with radial basis functions, map the tones through the
   model's response curves, descale to bytes. Each stage is a leaf replicated over the image's
   rows (descale: one instance over the whole image) inside a CPU wrapper node, and the root
   chains the wrappers: every buffer is bound from the root, and the size of the image a
   stage wrote reaches the next stage by an edge (a pointer and its size are two ports).

   Usage: cava [-w WB] CAM_MODEL_DIR RAW_IMAGE OUTPUT
   writes OUTPUT.bin (the pipeline's result) and OUTPUT_{demosaic,denoise,transform,gamut}.bin
   (those stages' images, descaled on the host), each as cam_pipe_utility.h's image files.
   Building with -D DEMOSAIC_SIZE_PORT=0 connects the scale stage's size to demosaic's image
   pointer instead of its size (a mistake, for the tests: the compiler refuses it). */
#include <argp.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cam_pipe_utility.h"
#include "defs.h"
#include "load_cam_model.h"
#include "utility.h"

#include "hpvm.h"

#ifndef DEMOSAIC_SIZE_PORT
#define DEMOSAIC_SIZE_PORT 1
#endif

/* The argument struct of the launch: the root's parameters in order, each buffer beside its
   size in bytes. */
typedef struct __attribute__((__packed__)) {
  uint8_t *input;       size_t bytes_input;
  uint8_t *result;      size_t bytes_result;
  float *input_scaled;  size_t bytes_input_scaled;
  float *result_scaled; size_t bytes_result_scaled;
  float *demosaic_out;  size_t bytes_demosaic_out;
  float *denoise_out;   size_t bytes_denoise_out;
  float *transform_out; size_t bytes_transform_out;
  float *gamut_out;     size_t bytes_gamut_out;
  float *TsTw;          size_t bytes_TsTw;
  float *ctrl_pts;      size_t bytes_ctrl_pts;
  float *weights;       size_t bytes_weights;
  float *coefs;         size_t bytes_coefs;
  float *tone_map;      size_t bytes_tone_map;
  size_t row_size;
  size_t col_size;
} RootIn;

/* The flat index of (channel, row, column) in a planar image. */
#define PIX(chan, r, c) (((chan) * (long)row_size + (r)) * (long)col_size + (c))

/*** Leaf nodes: one stage each, one instance per row ***/

void scale_fxp(uint8_t *input, size_t bytes_input, float *output, size_t bytes_output,
               size_t row_size, size_t col_size) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, input, 1, output);
  void *thisNode = __hpvm__getNode();
  long row = __hpvm__getNodeInstanceID_x(thisNode);
  for (int chan = 0; chan < CHAN_SIZE; chan++)
    for (long col = 0; col < (long)col_size; col++)
      output[PIX(chan, row, col)] = input[PIX(chan, row, col)] / 255.0f;
  __hpvm__return(1, bytes_output);
}

/* A neighbour's coordinate reflected back into [0, n): -1 is 1 and n is n - 2. Reflection
   keeps the coordinate's parity, so the neighbour has the colour the mosaic promises. */
static long reflect(long i, long n) { return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i); }

/* Bilinear demosaicing of a GRBG mosaic (even rows: green, red, green...; odd rows: blue,
   green, blue...): each site keeps its own colour and averages the nearest samples of the
   other two. The sensor image is planar too: site (r, c) of colour k is input[PIX(k, r, c)]. */
void demosaic_fxp(float *input, size_t bytes_input, float *result, size_t bytes_result,
                  size_t row_size, size_t col_size) {
  __hpvm__hint(DEVICE);
  __hpvm__attributes(1, input, 1, result);
  void *thisNode = __hpvm__getNode();
  long row = __hpvm__getNodeInstanceID_x(thisNode);
  long up = reflect(row - 1, row_size), down = reflect(row + 1, row_size);
  for (long col = 0; col < (long)col_size; col++) {
    long left = reflect(col - 1, col_size), right = reflect(col + 1, col_size);
    float r, g, b;
    if (row % 2 == 0 && col % 2 == 0) { /* green, red to the sides */
      r = (input[PIX(0, row, left)] + input[PIX(0, row, right)]) / 2;
      g = input[PIX(1, row, col)];
      b = (input[PIX(2, up, col)] + input[PIX(2, down, col)]) / 2;
    } else if (row % 2 == 0) { /* red */
      r = input[PIX(0, row, col)];
      g = (input[PIX(1, up, col)] + input[PIX(1, down, col)] + input[PIX(1, row, left)] +
           input[PIX(1, row, right)]) / 4;
      b = (input[PIX(2, up, left)] + input[PIX(2, up, right)] + input[PIX(2, down, left)] +
           input[PIX(2, down, right)]) / 4;
    } else if (col % 2 == 0) { /* blue */
      r = (input[PIX(0, up, left)] + input[PIX(0, up, right)] + input[PIX(0, down, left)] +
           input[PIX(0, down, right)]) / 4;
      g = (input[PIX(1, up, col)] + input[PIX(1, down, col)] + input[PIX(1, row, left)] +
           input[PIX(1, row, right)]) / 4;
      b = input[PIX(2, row, col)];
    } else { /* green, blue to the sides */
      r = (input[PIX(0, up, col)] + input[PIX(0, down, col)]) / 2;
      g = input[PIX(1, row, col)];
      b = (input[PIX(2, row, left)] + input[PIX(2, row, right)]) / 2;
    }
    result[PIX(0, row, col)] = r;
    result[PIX(1, row, col)] = g;
    result[PIX(2, row, col)] = b;
  }
  __hpvm__return(1, bytes_result);
}

/* Insertion sort of a median window (nine values: fewer moves than a bubble sort). */
static void sort_window(float *window, int n) {
  for (int i = 1; i < n; i++) {
    float v = window[i];
    int j = i - 1;
    for (; j >= 0 && window[j] > v; j--)
      window[j + 1] = window[j];
    window[j + 1] = v;
  }
}

/* The median of each pixel's 3x3 neighbourhood, channel by channel; the border is copied. */
void denoise_fxp(float *input, size_t bytes_input, float *result, size_t bytes_result,
                 size_t row_size, size_t col_size) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, input, 1, result);
  void *thisNode = __hpvm__getNode();
  long row = __hpvm__getNodeInstanceID_x(thisNode);
  for (int chan = 0; chan < CHAN_SIZE; chan++)
    for (long col = 0; col < (long)col_size; col++) {
      if (row >= 1 && row < (long)row_size - 1 && col >= 1 && col < (long)col_size - 1) {
        float window[9];
        int k = 0;
        for (int dr = -1; dr <= 1; dr++)
          for (int dc = -1; dc <= 1; dc++)
            window[k++] = input[PIX(chan, row + dr, col + dc)];
        sort_window(window, 9);
        result[PIX(chan, row, col)] = window[4];
      } else {
        result[PIX(chan, row, col)] = input[PIX(chan, row, col)];
      }
    }
  __hpvm__return(1, bytes_result);
}

/* The colour transform: each output channel a row of the camera's matrix (stored
   transposed: TsTw_tran[k * CHAN_SIZE + chan] weighs input channel k) times the pixel,
   negatives cut to 0. */
void transform_fxp(float *input, size_t bytes_input, float *result, size_t bytes_result,
                   float *TsTw_tran, size_t bytes_TsTw, size_t row_size, size_t col_size) {
  __hpvm__hint(DEVICE);
  __hpvm__attributes(2, input, TsTw_tran, 1, result);
  void *thisNode = __hpvm__getNode();
  long row = __hpvm__getNodeInstanceID_x(thisNode);
  for (int chan = 0; chan < CHAN_SIZE; chan++)
    for (long col = 0; col < (long)col_size; col++) {
      float v = input[PIX(0, row, col)] * TsTw_tran[0 * CHAN_SIZE + chan] +
                input[PIX(1, row, col)] * TsTw_tran[1 * CHAN_SIZE + chan] +
                input[PIX(2, row, col)] * TsTw_tran[2 * CHAN_SIZE + chan];
      result[PIX(chan, row, col)] = max(v, 0);
    }
  __hpvm__return(1, bytes_result);
}

/* The gamut map: a radial basis function network -- each control point's weights scaled by
   the pixel's distance to it -- plus an affine map (a bias row, then a row per channel),
   negatives cut to 0. */
void gamut_map_fxp(float *input, size_t bytes_input, float *result, size_t bytes_result,
                   float *ctrl_pts, size_t bytes_ctrl_pts, float *weights, size_t bytes_weights,
                   float *coefs, size_t bytes_coefs, size_t row_size, size_t col_size) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(4, input, ctrl_pts, weights, coefs, 1, result);
  void *thisNode = __hpvm__getNode();
  long row = __hpvm__getNodeInstanceID_x(thisNode);
  for (long col = 0; col < (long)col_size; col++) {
    float in0 = input[PIX(0, row, col)], in1 = input[PIX(1, row, col)],
          in2 = input[PIX(2, row, col)];
    float acc[CHAN_SIZE] = {0.0f, 0.0f, 0.0f};
    for (int cp = 0; cp < NUM_CTRL_PTS; cp++) {
      float d0 = in0 - ctrl_pts[cp * 3 + 0];
      float d1 = in1 - ctrl_pts[cp * 3 + 1];
      float d2 = in2 - ctrl_pts[cp * 3 + 2];
      float dist = sqrtf(d0 * d0 + d1 * d1 + d2 * d2);
      for (int chan = 0; chan < CHAN_SIZE; chan++)
        acc[chan] += dist * weights[cp * CHAN_SIZE + chan];
    }
    for (int chan = 0; chan < CHAN_SIZE; chan++) {
      float affine = coefs[0 * CHAN_SIZE + chan] + coefs[1 * CHAN_SIZE + chan] * in0 +
                     coefs[2 * CHAN_SIZE + chan] * in1 + coefs[3 * CHAN_SIZE + chan] * in2;
      result[PIX(chan, row, col)] = max(acc[chan] + affine, 0);
    }
  }
  __hpvm__return(1, bytes_result);
}

/* The tone map: each channel's response curve looked up at the value's byte (values past
   1 take the curve's last entry). */
void tone_map_fxp(float *input, size_t bytes_input, float *result, size_t bytes_result,
                  float *tone_map, size_t bytes_tone_map, size_t row_size, size_t col_size) {
  __hpvm__hint(DEVICE);
  __hpvm__attributes(2, input, tone_map, 1, result);
  void *thisNode = __hpvm__getNode();
  long row = __hpvm__getNodeInstanceID_x(thisNode);
  for (int chan = 0; chan < CHAN_SIZE; chan++)
    for (long col = 0; col < (long)col_size; col++) {
      uint8_t x = min(input[PIX(chan, row, col)] * 255, 255);
      result[PIX(chan, row, col)] = tone_map[x * CHAN_SIZE + chan];
    }
  __hpvm__return(1, bytes_result);
}

/* Back to bytes: one instance over the whole image. It returns nothing (the graph's end). */
void descale_fxp(float *input, size_t bytes_input, uint8_t *result, size_t bytes_result,
                 size_t row_size, size_t col_size) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, input, 1, result);
  for (int chan = 0; chan < CHAN_SIZE; chan++)
    for (long row = 0; row < (long)row_size; row++)
      for (long col = 0; col < (long)col_size; col++)
        result[PIX(chan, row, col)] = min(max(input[PIX(chan, row, col)] * 255, 0), 255);
}

/*** Internal nodes: a CPU wrapper around each leaf, and the root ***/

void scale_fxp_wrapper(uint8_t *input, size_t bytes_input, float *result, size_t bytes_result,
                       size_t row_size, size_t col_size) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, input, 1, result);
  void *ScaleNode = __hpvm__createNodeND(1, scale_fxp, row_size);
  __hpvm__bindIn(ScaleNode, 0, 0, 0); // input
  __hpvm__bindIn(ScaleNode, 1, 1, 0); // bytes_input
  __hpvm__bindIn(ScaleNode, 2, 2, 0); // result
  __hpvm__bindIn(ScaleNode, 3, 3, 0); // bytes_result
  __hpvm__bindIn(ScaleNode, 4, 4, 0); // row_size
  __hpvm__bindIn(ScaleNode, 5, 5, 0); // col_size
  __hpvm__bindOut(ScaleNode, 0, 0, 0); // bytes_result, for the next stage
}

void demosaic_fxp_wrapper(float *input, size_t bytes_input, float *result, size_t bytes_result,
                          size_t row_size, size_t col_size) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, input, 1, result);
  void *DemosaicNode = __hpvm__createNodeND(1, demosaic_fxp, row_size);
  __hpvm__bindIn(DemosaicNode, 0, 0, 0);
  __hpvm__bindIn(DemosaicNode, 1, 1, 0);
  __hpvm__bindIn(DemosaicNode, 2, 2, 0);
  __hpvm__bindIn(DemosaicNode, 3, 3, 0);
  __hpvm__bindIn(DemosaicNode, 4, 4, 0);
  __hpvm__bindIn(DemosaicNode, 5, 5, 0);
  __hpvm__bindOut(DemosaicNode, 0, 0, 0);
}

void denoise_fxp_wrapper(float *input, size_t bytes_input, float *result, size_t bytes_result,
                         size_t row_size, size_t col_size) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, input, 1, result);
  void *DenoiseNode = __hpvm__createNodeND(1, denoise_fxp, row_size);
  __hpvm__bindIn(DenoiseNode, 0, 0, 0);
  __hpvm__bindIn(DenoiseNode, 1, 1, 0);
  __hpvm__bindIn(DenoiseNode, 2, 2, 0);
  __hpvm__bindIn(DenoiseNode, 3, 3, 0);
  __hpvm__bindIn(DenoiseNode, 4, 4, 0);
  __hpvm__bindIn(DenoiseNode, 5, 5, 0);
  __hpvm__bindOut(DenoiseNode, 0, 0, 0);
}

void transform_fxp_wrapper(float *input, size_t bytes_input, float *result,
                           size_t bytes_result, float *TsTw_tran, size_t bytes_TsTw,
                           size_t row_size, size_t col_size) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, input, TsTw_tran, 1, result);
  void *TransformNode = __hpvm__createNodeND(1, transform_fxp, row_size);
  for (int port = 0; port < 8; port++)
    __hpvm__bindIn(TransformNode, port, port, 0);
  __hpvm__bindOut(TransformNode, 0, 0, 0);
}

void gamut_map_fxp_wrapper(float *input, size_t bytes_input, float *result, size_t bytes_result,
                           float *ctrl_pts, size_t bytes_ctrl_pts, float *weights,
                           size_t bytes_weights, float *coefs, size_t bytes_coefs,
                           size_t row_size, size_t col_size) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(4, input, ctrl_pts, weights, coefs, 1, result);
  void *GamutNode = __hpvm__createNodeND(1, gamut_map_fxp, row_size);
  for (int port = 0; port < 12; port++)
    __hpvm__bindIn(GamutNode, port, port, 0);
  __hpvm__bindOut(GamutNode, 0, 0, 0);
}

void tone_map_fxp_wrapper(float *input, size_t bytes_input, float *result, size_t bytes_result,
                          float *tone_map, size_t bytes_tone_map, size_t row_size,
                          size_t col_size) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, input, tone_map, 1, result);
  void *ToneMapNode = __hpvm__createNodeND(1, tone_map_fxp, row_size);
  for (int port = 0; port < 8; port++)
    __hpvm__bindIn(ToneMapNode, port, port, 0);
  __hpvm__bindOut(ToneMapNode, 0, 0, 0);
}

void descale_fxp_wrapper(float *input, size_t bytes_input, uint8_t *result, size_t bytes_result,
                         size_t row_size, size_t col_size) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, input, 1, result);
  void *DescaleNode = __hpvm__createNodeND(0, descale_fxp);
  for (int port = 0; port < 6; port++)
    __hpvm__bindIn(DescaleNode, port, port, 0);
}

void CamPipeRoot(/*0*/ uint8_t *input, /*1*/ size_t bytes_input,
                 /*2*/ uint8_t *result, /*3*/ size_t bytes_result,
                 /*4*/ float *input_scaled, /*5*/ size_t bytes_input_scaled,
                 /*6*/ float *result_scaled, /*7*/ size_t bytes_result_scaled,
                 /*8*/ float *demosaic_out, /*9*/ size_t bytes_demosaic_out,
                 /*10*/ float *denoise_out, /*11*/ size_t bytes_denoise_out,
                 /*12*/ float *transform_out, /*13*/ size_t bytes_transform_out,
                 /*14*/ float *gamut_out, /*15*/ size_t bytes_gamut_out,
                 /*16*/ float *TsTw, /*17*/ size_t bytes_TsTw,
                 /*18*/ float *ctrl_pts, /*19*/ size_t bytes_ctrl_pts,
                 /*20*/ float *weights, /*21*/ size_t bytes_weights,
                 /*22*/ float *coefs, /*23*/ size_t bytes_coefs,
                 /*24*/ float *tone_map, /*25*/ size_t bytes_tone_map,
                 /*26*/ size_t row_size, /*27*/ size_t col_size) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(13, input, result, input_scaled, result_scaled, demosaic_out, denoise_out,
                     transform_out, gamut_out, TsTw, ctrl_pts, weights, coefs, tone_map, 6,
                     result, result_scaled, demosaic_out, denoise_out, transform_out, gamut_out);

  void *ScNode = __hpvm__createNodeND(0, scale_fxp_wrapper);
  void *DmNode = __hpvm__createNodeND(0, demosaic_fxp_wrapper);
  void *DnNode = __hpvm__createNodeND(0, denoise_fxp_wrapper);
  void *TrNode = __hpvm__createNodeND(0, transform_fxp_wrapper);
  void *GmNode = __hpvm__createNodeND(0, gamut_map_fxp_wrapper);
  void *TnNode = __hpvm__createNodeND(0, tone_map_fxp_wrapper);
  void *DsNode = __hpvm__createNodeND(0, descale_fxp_wrapper);

  // scale: the raw image into input_scaled
  __hpvm__bindIn(ScNode, 0, 0, 0);  // input
  __hpvm__bindIn(ScNode, 1, 1, 0);  // bytes_input
  __hpvm__bindIn(ScNode, 4, 2, 0);  // input_scaled -> result
  __hpvm__bindIn(ScNode, 5, 3, 0);  // bytes_input_scaled -> bytes_result
  __hpvm__bindIn(ScNode, 26, 4, 0); // row_size
  __hpvm__bindIn(ScNode, 27, 5, 0); // col_size

  // demosaic: input_scaled into demosaic_out
  __hpvm__bindIn(DmNode, 4, 0, 0);        // input_scaled -> input
  // scale's bytes_result -> bytes_input
  __hpvm__edge(ScNode, DmNode, 1, 0, DEMOSAIC_SIZE_PORT, 0); // @size_edge
  __hpvm__bindIn(DmNode, 8, 2, 0);        // demosaic_out -> result
  __hpvm__bindIn(DmNode, 9, 3, 0);        // bytes_demosaic_out -> bytes_result
  __hpvm__bindIn(DmNode, 26, 4, 0);
  __hpvm__bindIn(DmNode, 27, 5, 0);

  // denoise: demosaic_out into denoise_out
  __hpvm__bindIn(DnNode, 8, 0, 0);
  __hpvm__edge(DmNode, DnNode, 1, 0, 1, 0);
  __hpvm__bindIn(DnNode, 10, 2, 0);
  __hpvm__bindIn(DnNode, 11, 3, 0);
  __hpvm__bindIn(DnNode, 26, 4, 0);
  __hpvm__bindIn(DnNode, 27, 5, 0);

  // transform: denoise_out into transform_out, by TsTw
  __hpvm__bindIn(TrNode, 10, 0, 0);
  __hpvm__edge(DnNode, TrNode, 1, 0, 1, 0);
  __hpvm__bindIn(TrNode, 12, 2, 0);
  __hpvm__bindIn(TrNode, 13, 3, 0);
  __hpvm__bindIn(TrNode, 16, 4, 0); // TsTw
  __hpvm__bindIn(TrNode, 17, 5, 0); // bytes_TsTw
  __hpvm__bindIn(TrNode, 26, 6, 0);
  __hpvm__bindIn(TrNode, 27, 7, 0);

  // gamut map: transform_out into gamut_out, by the control points, weights and coefs
  __hpvm__bindIn(GmNode, 12, 0, 0);
  __hpvm__edge(TrNode, GmNode, 1, 0, 1, 0);
  __hpvm__bindIn(GmNode, 14, 2, 0);
  __hpvm__bindIn(GmNode, 15, 3, 0);
  __hpvm__bindIn(GmNode, 18, 4, 0);  // ctrl_pts
  __hpvm__bindIn(GmNode, 19, 5, 0);
  __hpvm__bindIn(GmNode, 20, 6, 0);  // weights
  __hpvm__bindIn(GmNode, 21, 7, 0);
  __hpvm__bindIn(GmNode, 22, 8, 0);  // coefs
  __hpvm__bindIn(GmNode, 23, 9, 0);
  __hpvm__bindIn(GmNode, 26, 10, 0);
  __hpvm__bindIn(GmNode, 27, 11, 0);

  // tone map: gamut_out into result_scaled, by the tone curves
  __hpvm__bindIn(TnNode, 14, 0, 0);
  __hpvm__edge(GmNode, TnNode, 1, 0, 1, 0);
  __hpvm__bindIn(TnNode, 6, 2, 0);
  __hpvm__bindIn(TnNode, 7, 3, 0);
  __hpvm__bindIn(TnNode, 24, 4, 0); // tone_map
  __hpvm__bindIn(TnNode, 25, 5, 0);
  __hpvm__bindIn(TnNode, 26, 6, 0);
  __hpvm__bindIn(TnNode, 27, 7, 0);

  // descale: result_scaled into the result bytes
  __hpvm__bindIn(DsNode, 6, 0, 0);
  __hpvm__edge(TnNode, DsNode, 1, 0, 1, 0);
  __hpvm__bindIn(DsNode, 2, 2, 0);
  __hpvm__bindIn(DsNode, 3, 3, 0);
  __hpvm__bindIn(DsNode, 26, 4, 0);
  __hpvm__bindIn(DsNode, 27, 5, 0);
}

/*** The host ***/

typedef struct {
  char *cam_model, *raw_image, *output;
  int wb_index;
  int positional;
} arguments;

static char doc[] = "cava -- a camera vision pipeline as an HPVM dataflow graph";
static char args_doc[] = "CAM_MODEL_DIR RAW_IMAGE OUTPUT";
static struct argp_option options[] = {
    {"white-balance", 'w', "WB", 0, "the camera model's white balance to use (from 1)", 0},
    {0}};

static error_t parse_opt(int key, char *arg, struct argp_state *state) {
  arguments *args = state->input;
  switch (key) {
  case 'w': {
    char *end;
    long wb = strtol(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || wb < 1 || wb > 1000) {
      argp_error(state, "the white balance must be a number from 1: '%s'", arg);
      return EINVAL;
    }
    args->wb_index = (int)wb;
    return 0;
  }
  case ARGP_KEY_ARG:
    if (state->arg_num >= 3) {
      argp_error(state, "too many arguments");
      return EINVAL;
    }
    (&args->cam_model)[state->arg_num] = arg;
    args->positional++;
    return 0;
  case ARGP_KEY_END:
    if (args->positional < 3) {
      argp_error(state, "need %d arguments, got %d", 3, args->positional);
      return EINVAL;
    }
    return 0;
  default:
    return ARGP_ERR_UNKNOWN;
  }
}

static struct argp parser = {options, parse_opt, args_doc, doc, 0, 0, 0};

static int write_stage(const char *base, const char *suffix, const float *stage, uint8_t *bytes,
                       uint8_t *image, size_t row_size, size_t col_size) {
  char path[4096];
  snprintf(path, sizeof path, "%s%s.bin", base, suffix);
  if (stage != NULL)
    descale_cpu(stage, bytes, row_size, col_size);
  convert_chw_to_hwc(bytes, row_size, col_size, image);
  return write_image_to_binary(path, image, row_size, col_size);
}

int main(int argc, char *argv[]) {
  arguments args = {NULL, NULL, NULL, 1, 0};
  if (argp_parse(&parser, argc, argv, ARGP_NO_EXIT, 0, &args) != 0 || args.positional < 3)
    return 1;

  size_t row_size, col_size;
  uint8_t *image_in = read_image_from_binary(args.raw_image, &row_size, &col_size);
  if (image_in == NULL)
    return 1;
  float *TsTw = get_TsTw(args.cam_model, args.wb_index);
  float *ctrl_pts = get_ctrl_pts(args.cam_model);
  float *weights = get_weights(args.cam_model);
  float *coefs = get_coefs(args.cam_model);
  float *tone_map = get_tone_map(args.cam_model);
  if (!TsTw || !ctrl_pts || !weights || !coefs || !tone_map)
    return 1;
  /* The file holds each matrix by rows; the transform stage reads it by columns. */
  float *TsTw_tran = transpose_mat(TsTw, CHAN_SIZE, CHAN_SIZE);
  free(TsTw);
  printf("cava: %zu x %zu raw image, white balance %d\n", row_size, col_size, args.wb_index);

  size_t bytes_image = sizeof(uint8_t) * row_size * col_size * CHAN_SIZE;
  size_t bytes_fimage = sizeof(float) * row_size * col_size * CHAN_SIZE;
  size_t bytes_TsTw = sizeof(float) * CHAN_SIZE * CHAN_SIZE;
  size_t bytes_ctrl_pts = sizeof(float) * NUM_CTRL_PTS * CHAN_SIZE;
  size_t bytes_weights = sizeof(float) * NUM_CTRL_PTS * CHAN_SIZE;
  size_t bytes_coefs = sizeof(float) * NUM_COEF_ROWS * CHAN_SIZE;
  size_t bytes_tone_map = sizeof(float) * TONE_MAP_SIZE * CHAN_SIZE;

  __hpvm__init();

  uint8_t *input = malloc_aligned(bytes_image);
  uint8_t *result = malloc_aligned(bytes_image);
  float *input_scaled = malloc_aligned(bytes_fimage);
  float *result_scaled = malloc_aligned(bytes_fimage);
  float *demosaic_out = malloc_aligned(bytes_fimage);
  float *denoise_out = malloc_aligned(bytes_fimage);
  float *transform_out = malloc_aligned(bytes_fimage);
  float *gamut_out = malloc_aligned(bytes_fimage);
  convert_hwc_to_chw(image_in, row_size, col_size, input);

  RootIn *rootArgs = (RootIn *)malloc(sizeof(RootIn));
  rootArgs->input = input;
  rootArgs->bytes_input = bytes_image;
  rootArgs->result = result;
  rootArgs->bytes_result = bytes_image;
  rootArgs->input_scaled = input_scaled;
  rootArgs->bytes_input_scaled = bytes_fimage;
  rootArgs->result_scaled = result_scaled;
  rootArgs->bytes_result_scaled = bytes_fimage;
  rootArgs->demosaic_out = demosaic_out;
  rootArgs->bytes_demosaic_out = bytes_fimage;
  rootArgs->denoise_out = denoise_out;
  rootArgs->bytes_denoise_out = bytes_fimage;
  rootArgs->transform_out = transform_out;
  rootArgs->bytes_transform_out = bytes_fimage;
  rootArgs->gamut_out = gamut_out;
  rootArgs->bytes_gamut_out = bytes_fimage;
  rootArgs->TsTw = TsTw_tran;
  rootArgs->bytes_TsTw = bytes_TsTw;
  rootArgs->ctrl_pts = ctrl_pts;
  rootArgs->bytes_ctrl_pts = bytes_ctrl_pts;
  rootArgs->weights = weights;
  rootArgs->bytes_weights = bytes_weights;
  rootArgs->coefs = coefs;
  rootArgs->bytes_coefs = bytes_coefs;
  rootArgs->tone_map = tone_map;
  rootArgs->bytes_tone_map = bytes_tone_map;
  rootArgs->row_size = row_size;
  rootArgs->col_size = col_size;

  /* Every buffer the graph touches is tracked, each by its address and size. */
  llvm_hpvm_track_mem(input, bytes_image);
  llvm_hpvm_track_mem(result, bytes_image);
  llvm_hpvm_track_mem(input_scaled, bytes_fimage);
  llvm_hpvm_track_mem(result_scaled, bytes_fimage);
  llvm_hpvm_track_mem(demosaic_out, bytes_fimage);
  llvm_hpvm_track_mem(denoise_out, bytes_fimage);
  llvm_hpvm_track_mem(transform_out, bytes_fimage);
  llvm_hpvm_track_mem(gamut_out, bytes_fimage);
  llvm_hpvm_track_mem(TsTw_tran, bytes_TsTw);
  llvm_hpvm_track_mem(ctrl_pts, bytes_ctrl_pts);
  llvm_hpvm_track_mem(weights, bytes_weights);
  llvm_hpvm_track_mem(coefs, bytes_coefs);
  llvm_hpvm_track_mem(tone_map, bytes_tone_map);

  void *camPipeDFG = __hpvm__launch(0, CamPipeRoot, (void *)rootArgs);
  __hpvm__wait(camPipeDFG);

  llvm_hpvm_request_mem(result, bytes_image);
  llvm_hpvm_request_mem(demosaic_out, bytes_fimage);
  llvm_hpvm_request_mem(denoise_out, bytes_fimage);
  llvm_hpvm_request_mem(transform_out, bytes_fimage);
  llvm_hpvm_request_mem(gamut_out, bytes_fimage);

  uint8_t *bytes = malloc_aligned(bytes_image), *image_out = malloc_aligned(bytes_image);
  int failed = write_stage(args.output, "", NULL, result, image_out, row_size, col_size);
  failed |= write_stage(args.output, "_demosaic", demosaic_out, bytes, image_out, row_size, col_size);
  failed |= write_stage(args.output, "_denoise", denoise_out, bytes, image_out, row_size, col_size);
  failed |= write_stage(args.output, "_transform", transform_out, bytes, image_out, row_size,
                        col_size);
  failed |= write_stage(args.output, "_gamut", gamut_out, bytes, image_out, row_size, col_size);
  if (!failed)
    printf("cava: wrote %s.bin and 4 stage images\n", args.output);

  llvm_hpvm_untrack_mem(input);
  llvm_hpvm_untrack_mem(result);
  llvm_hpvm_untrack_mem(input_scaled);
  llvm_hpvm_untrack_mem(result_scaled);
  llvm_hpvm_untrack_mem(demosaic_out);
  llvm_hpvm_untrack_mem(denoise_out);
  llvm_hpvm_untrack_mem(transform_out);
  llvm_hpvm_untrack_mem(gamut_out);
  llvm_hpvm_untrack_mem(TsTw_tran);
  llvm_hpvm_untrack_mem(ctrl_pts);
  llvm_hpvm_untrack_mem(weights);
  llvm_hpvm_untrack_mem(coefs);
  llvm_hpvm_untrack_mem(tone_map);
  __hpvm__cleanup();

  free(rootArgs);
  free(image_in);
  free(input);
  free(result);
  free(input_scaled);
  free(result_scaled);
  free(demosaic_out);
  free(denoise_out);
  free(transform_out);
  free(gamut_out);
  free(TsTw_tran);
  free(ctrl_pts);
  free(weights);
  free(coefs);
  free(tone_map);
  free(bytes);
  free(image_out);
  return failed;
}
