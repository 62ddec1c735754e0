/* Reads an image of bytes (parboil's raw layout: the byte count as a 32-bit word, then the
   bytes), launches the graph once per run and writes the 256 counts as 32-bit words. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hpvm.h"
#include "histo_local.h"

static unsigned char *read_image(const char *path, int *n) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "histo: cannot open %s\n", path);
    return NULL;
  }
  unsigned int count = 0;
  unsigned char *img = NULL;
  if (fread(&count, 4, 1, f) != 1 || !(img = malloc(count ? count : 1)) || fread(img, 1, count, f) != count) {
    fprintf(stderr, "histo: %s is shorter than its header says\n", path);
    free(img);
    fclose(f);
    return NULL;
  }
  fclose(f);
  *n = (int)count;
  return img;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: histo image.bin histo.bin [runs]\n");
    return 2;
  }
  int n = 0, runs = argc > 3 ? atoi(argv[3]) : 1;
  unsigned char *img = read_image(argv[1], &n);
  if (!img)
    return 1;
  size_t bytes_img = (size_t)n, bytes_histo = BINS * sizeof(int);
  int *histo = malloc(bytes_histo);
  __hpvm__init();
  llvm_hpvm_track_mem(img, bytes_img);
  llvm_hpvm_track_mem(histo, bytes_histo);
  for (int r = 0; r < runs; r++) {
    memset(histo, 0, bytes_histo);
    RootIn *args = malloc(sizeof(RootIn));
    *args = (RootIn){img, bytes_img, histo, bytes_histo, n, BINS * sizeof(int)};
    void *graph = __hpvm__launch(0, histo_root, (void *)args);
    __hpvm__wait(graph);
    llvm_hpvm_request_mem(histo, bytes_histo);
    free(args);
  }
  llvm_hpvm_untrack_mem(img);
  llvm_hpvm_untrack_mem(histo);
  __hpvm__cleanup();
  FILE *out = fopen(argv[2], "wb");
  if (!out || fwrite(histo, sizeof(int), BINS, out) != BINS) {
    fprintf(stderr, "histo: cannot write %s\n", argv[2]);
    return 1;
  }
  fclose(out);
  printf("histo: %d pixels, %d runs\n", n, runs);
  free(img);
  free(histo);
  return 0;
}
