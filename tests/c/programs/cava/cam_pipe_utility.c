/* The host side of the pipeline's images: reading the raw sensor file, writing results,
   switching between the file's interleaved layout and the stages' planar one, and turning
   a float stage back into bytes for inspection. None of this runs in the graph. */
#include <stdio.h>
#include <stdlib.h>

#include "cam_pipe_utility.h"
#include "defs.h"
#include "utility.h"

uint8_t *read_image_from_binary(const char *path, size_t *row_size, size_t *col_size) {
  FILE *fp = fopen(path, "rb");
  if (fp == NULL) {
    fprintf(stderr, "cava: cannot open the raw image '%s'\n", path);
    return NULL;
  }
  int shape[3];
  if (fread(shape, sizeof(int), 3, fp) != 3) {
    fprintf(stderr, "cava: raw image '%s' has no header\n", path);
    fclose(fp);
    return NULL;
  }
  if (shape[0] < 2 || shape[1] < 2 || shape[2] != CHAN_SIZE) {
    fprintf(stderr, "cava: raw image '%s' is %d x %d x %d; need at least 2 x 2 x %d\n", path,
            shape[0], shape[1], shape[2], CHAN_SIZE);
    fclose(fp);
    return NULL;
  }
  size_t size = (size_t)shape[0] * (size_t)shape[1] * CHAN_SIZE;
  uint8_t *image = malloc_aligned(size);
  size_t got = image == NULL ? 0 : fread(image, 1, size, fp);
  int extra = fgetc(fp) != EOF;
  fclose(fp);
  if (got != size || extra) {
    fprintf(stderr, "cava: raw image '%s' should hold %zu bytes after its header\n", path, size);
    free(image);
    return NULL;
  }
  *row_size = (size_t)shape[0];
  *col_size = (size_t)shape[1];
  return image;
}

int write_image_to_binary(const char *path, const uint8_t *image, size_t row_size,
                          size_t col_size) {
  FILE *fp = fopen(path, "wb");
  if (fp == NULL) {
    fprintf(stderr, "cava: cannot write '%s'\n", path);
    return 1;
  }
  int shape[3] = {(int)row_size, (int)col_size, CHAN_SIZE};
  size_t size = row_size * col_size * CHAN_SIZE;
  int ok = fwrite(shape, sizeof(int), 3, fp) == 3 && fwrite(image, 1, size, fp) == size;
  return (fclose(fp) == 0 && ok) ? 0 : 1;
}

float *transpose_mat(const float *in, int rows, int cols) {
  float *out = malloc_aligned(sizeof(float) * rows * cols);
  if (out == NULL)
    return NULL;
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++)
      out[j * rows + i] = in[i * cols + j];
  return out;
}

void convert_hwc_to_chw(const uint8_t *in, size_t row_size, size_t col_size, uint8_t *out) {
  AS_HWC(const uint8_t, src, in, col_size);
  AS_CHW(uint8_t, dst, out, row_size, col_size);
  for (size_t r = 0; r < row_size; r++)
    for (size_t c = 0; c < col_size; c++)
      for (int ch = 0; ch < CHAN_SIZE; ch++)
        dst[ch][r][c] = src[r][c][ch];
}

void convert_chw_to_hwc(const uint8_t *in, size_t row_size, size_t col_size, uint8_t *out) {
  AS_CHW(const uint8_t, src, in, row_size, col_size);
  AS_HWC(uint8_t, dst, out, col_size);
  for (int ch = 0; ch < CHAN_SIZE; ch++)
    for (size_t r = 0; r < row_size; r++)
      for (size_t c = 0; c < col_size; c++)
        dst[r][c][ch] = src[ch][r][c];
}

/* The descale stage's arithmetic, for the intermediate images main writes. */
void descale_cpu(const float *in, uint8_t *out, size_t row_size, size_t col_size) {
  for (size_t i = 0; i < CHAN_SIZE * row_size * col_size; i++)
    out[i] = min(max(in[i] * 255, 0), 255);
}
