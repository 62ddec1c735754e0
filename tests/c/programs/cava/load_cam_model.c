/* Reading the camera model's tables (the format: load_cam_model.h). The rows a getter wants
   are a window [first, first + count) of the file's data rows; a file with fewer rows, or
   a row that is not three numbers, is refused with its name and line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "defs.h"
#include "load_cam_model.h"
#include "utility.h"

static int parse_row(const char *line, float out[3]) {
  const char *p = line;
  for (int k = 0; k < 3; k++) {
    char *end;
    out[k] = strtof(p, &end);
    if (end == p)
      return 0;
    p = end;
  }
  while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
    p++;
  return *p == '\0';
}

static float *read_table(const char *model_dir, const char *name, int first, int count) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", model_dir, name);
  FILE *fp = fopen(path, "r");
  if (fp == NULL) {
    fprintf(stderr, "cava: camera model file '%s' is missing\n", path);
    return NULL;
  }
  float *table = malloc_aligned(sizeof(float) * 3 * count);
  char line[512];
  int line_no = 0, row = 0, bad = table == NULL;
  while (!bad && row < first + count && fgets(line, sizeof line, fp) != NULL) {
    line_no++;
    if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
      continue;
    float values[3];
    if (!parse_row(line, values)) {
      fprintf(stderr, "cava: camera model file '%s', line %d: not three numbers\n", path, line_no);
      bad = 1;
    } else {
      if (row >= first)
        memcpy(&table[3 * (row - first)], values, sizeof values);
      row++;
    }
  }
  fclose(fp);
  if (!bad && row < first + count) {
    fprintf(stderr, "cava: camera model file '%s' has %d rows; need %d\n", path, row, first + count);
    bad = 1;
  }
  if (bad) {
    free(table);
    return NULL;
  }
  return table;
}

float *get_TsTw(const char *model_dir, int wb_index) {
  return read_table(model_dir, "transform.txt", 3 * (wb_index - 1), 3);
}

float *get_ctrl_pts(const char *model_dir) {
  return read_table(model_dir, "ctrl_points.txt", 0, NUM_CTRL_PTS);
}

float *get_weights(const char *model_dir) {
  return read_table(model_dir, "coefs.txt", 0, NUM_CTRL_PTS);
}

float *get_coefs(const char *model_dir) {
  return read_table(model_dir, "coefs.txt", NUM_CTRL_PTS, NUM_COEF_ROWS);
}

float *get_tone_map(const char *model_dir) {
  return read_table(model_dir, "tone_map.txt", 0, TONE_MAP_SIZE);
}
