#ifndef CAVA_CAM_PIPE_UTILITY_H
#define CAVA_CAM_PIPE_UTILITY_H

#include <stddef.h>
#include <stdint.h>

/* Image files: three native ints (rows, columns, channels) and then the interleaved
   (row, column, channel) bytes. */
uint8_t *read_image_from_binary(const char *path, size_t *row_size, size_t *col_size);
int write_image_to_binary(const char *path, const uint8_t *image, size_t row_size,
                          size_t col_size);

float *transpose_mat(const float *in, int rows, int cols);
void convert_hwc_to_chw(const uint8_t *in, size_t row_size, size_t col_size, uint8_t *out);
void convert_chw_to_hwc(const uint8_t *in, size_t row_size, size_t col_size, uint8_t *out);
void descale_cpu(const float *in, uint8_t *out, size_t row_size, size_t col_size);

#endif
