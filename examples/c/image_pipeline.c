/* A three-stage image pipeline in the style of HPVM's pipeline benchmark: each stage is a
   wrapper (an internal node) around a 2-D replicated leaf, one instance per pixel. Each
   leaf returns the size of the image it wrote, and the next stage takes that size by an
   edge while its pointer is bound from the root -- in HPVM a pointer and its size are two
   ports (docs/hpvm-c.md, "Ports"):

     blur:      B = the 3x3 box blur of I (borders clamped);  returns (bytesB, bytesB)
     gradient:  G = |dB/dx| + |dB/dy| (central differences);   returns bytesG
     threshold: E = B where G > t, else 0;                      returns bytesE

   main checks B, G and E against the same loops in C and returns nonzero on a mismatch.
   Usage: image_pipeline [rows cols] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"

struct out_t {
  size_t bytesE;
};

typedef struct __attribute__((__packed__)) {
  float *I; size_t bytesI;
  float *B; size_t bytesB;
  float *G; size_t bytesG;
  float *E; size_t bytesE;
  float t;
  long m; long n;
  struct out_t out;
} RootIn;

static long clamp(long v, long hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

void blur(float *I, size_t bytesI, float *B, size_t bytesB, long m, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, I, 1, B);
  void *self = __hpvm__getNode();
  long x = __hpvm__getNodeInstanceID_x(self), y = __hpvm__getNodeInstanceID_y(self);
  float sum = 0.0f;
  for (long dy = -1; dy <= 1; dy++)
    for (long dx = -1; dx <= 1; dx++)
      sum += I[clamp(y + dy, m - 1) * n + clamp(x + dx, n - 1)];
  B[y * n + x] = sum / 9.0f;
  __hpvm__return(2, bytesB, bytesB);  /* B's size, for each stage that reads B */
}

void WrapperBlur(float *I, size_t bytesI, float *B, size_t bytesB, long m, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, I, 1, B);
  void *node = __hpvm__createNodeND(2, blur, n, m);
  for (int k = 0; k < 6; k++) __hpvm__bindIn(node, k, k, 0);
  __hpvm__bindOut(node, 0, 0, 0);
  __hpvm__bindOut(node, 1, 1, 0);
}

void gradient(float *B, size_t bytesB, float *G, size_t bytesG, long m, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, B, 1, G);
  void *self = __hpvm__getNode();
  long x = __hpvm__getNodeInstanceID_x(self), y = __hpvm__getNodeInstanceID_y(self);
  float gx = B[y * n + clamp(x + 1, n - 1)] - B[y * n + clamp(x - 1, n - 1)];
  float gy = B[clamp(y + 1, m - 1) * n + x] - B[clamp(y - 1, m - 1) * n + x];
  G[y * n + x] = fabsf(gx) + fabsf(gy);
  __hpvm__return(1, bytesG);
}

void WrapperGradient(float *B, size_t bytesB, float *G, size_t bytesG, long m, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, B, 1, G);
  void *node = __hpvm__createNodeND(2, gradient, n, m);
  for (int k = 0; k < 6; k++) __hpvm__bindIn(node, k, k, 0);
  __hpvm__bindOut(node, 0, 0, 0);
}

void threshold(float *B, size_t bytesB, float *G, size_t bytesG, float *E, size_t bytesE, float t,
               long m, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, B, G, 1, E);
  void *self = __hpvm__getNode();
  long x = __hpvm__getNodeInstanceID_x(self), y = __hpvm__getNodeInstanceID_y(self);
  long i = y * n + x;
  E[i] = G[i] > t ? B[i] : 0.0f;
  __hpvm__return(1, bytesE);
}

void WrapperThreshold(float *B, size_t bytesB, float *G, size_t bytesG, float *E, size_t bytesE,
                      float t, long m, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, B, G, 1, E);
  void *node = __hpvm__createNodeND(2, threshold, n, m);
  for (int k = 0; k < 9; k++) __hpvm__bindIn(node, k, k, 0);
  __hpvm__bindOut(node, 0, 0, 0);
}

void imagePipeline(float *I, size_t bytesI,  // 0, 1
                   float *B, size_t bytesB,  // 2, 3
                   float *G, size_t bytesG,  // 4, 5
                   float *E, size_t bytesE,  // 6, 7
                   float t, long m, long n) {  // 8, 9, 10
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, I, 3, B, G, E);
  void *BNode = __hpvm__createNodeND(0, WrapperBlur);
  void *GNode = __hpvm__createNodeND(0, WrapperGradient);
  void *TNode = __hpvm__createNodeND(0, WrapperThreshold);

  __hpvm__bindIn(BNode, 0, 0, 0);  // Bind I
  __hpvm__bindIn(BNode, 1, 1, 0);  // Bind bytesI
  __hpvm__bindIn(BNode, 2, 2, 0);  // Bind B
  __hpvm__bindIn(BNode, 3, 3, 0);  // Bind bytesB
  __hpvm__bindIn(BNode, 9, 4, 0);  // Bind m
  __hpvm__bindIn(BNode, 10, 5, 0); // Bind n

  __hpvm__bindIn(GNode, 2, 0, 0);         // Bind B
  __hpvm__edge(BNode, GNode, 1, 0, 1, 0); // Get bytesB
  __hpvm__bindIn(GNode, 4, 2, 0);         // Bind G
  __hpvm__bindIn(GNode, 5, 3, 0);         // Bind bytesG
  __hpvm__bindIn(GNode, 9, 4, 0);         // Bind m
  __hpvm__bindIn(GNode, 10, 5, 0);        // Bind n

  __hpvm__bindIn(TNode, 2, 0, 0);         // Bind B
  __hpvm__edge(BNode, TNode, 1, 1, 1, 0); // Get bytesB (blur's second output)
  __hpvm__bindIn(TNode, 4, 2, 0);         // Bind G
  __hpvm__edge(GNode, TNode, 1, 0, 3, 0); // Get bytesG
  __hpvm__bindIn(TNode, 6, 4, 0);         // Bind E
  __hpvm__bindIn(TNode, 7, 5, 0);         // Bind bytesE
  __hpvm__bindIn(TNode, 8, 6, 0);         // Bind t
  __hpvm__bindIn(TNode, 9, 7, 0);         // Bind m
  __hpvm__bindIn(TNode, 10, 8, 0);        // Bind n

  __hpvm__bindOut(TNode, 0, 0, 0);        // bytesE
}

int main(int argc, char **argv) {
  long m = argc > 2 ? atol(argv[1]) : 24, n = argc > 2 ? atol(argv[2]) : 32;
  size_t bytes = (size_t)(m * n) * sizeof(float);
  float *I = malloc(bytes), *B = malloc(bytes), *G = malloc(bytes), *E = malloc(bytes);
  float *wantB = malloc(bytes), *wantG = malloc(bytes), *wantE = malloc(bytes);
  float t = 0.5f;
  for (long i = 0; i < m * n; i++) I[i] = (float)((i * 7919) % 23) / 4.0f;

  /* The same stages as plain C loops. */
  for (long y = 0; y < m; y++)
    for (long x = 0; x < n; x++) {
      float sum = 0.0f;
      for (long dy = -1; dy <= 1; dy++)
        for (long dx = -1; dx <= 1; dx++) sum += I[clamp(y + dy, m - 1) * n + clamp(x + dx, n - 1)];
      wantB[y * n + x] = sum / 9.0f;
    }
  for (long y = 0; y < m; y++)
    for (long x = 0; x < n; x++) {
      float gx = wantB[y * n + clamp(x + 1, n - 1)] - wantB[y * n + clamp(x - 1, n - 1)];
      float gy = wantB[clamp(y + 1, m - 1) * n + x] - wantB[clamp(y - 1, m - 1) * n + x];
      wantG[y * n + x] = fabsf(gx) + fabsf(gy);
      wantE[y * n + x] = wantG[y * n + x] > t ? wantB[y * n + x] : 0.0f;
    }

  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  args->I = I; args->bytesI = bytes;
  args->B = B; args->bytesB = bytes;
  args->G = G; args->bytesG = bytes;
  args->E = E; args->bytesE = bytes;
  args->t = t; args->m = m; args->n = n;
  llvm_hpvm_track_mem(I, bytes);
  llvm_hpvm_track_mem(B, bytes);
  llvm_hpvm_track_mem(G, bytes);
  llvm_hpvm_track_mem(E, bytes);
  void *graph = __hpvm__launch(0, imagePipeline, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(B, bytes);
  llvm_hpvm_request_mem(G, bytes);
  llvm_hpvm_request_mem(E, bytes);
  int bad = 0, edges = 0;
  for (long i = 0; i < m * n; i++) {
    bad += B[i] != wantB[i];
    bad += G[i] != wantG[i];
    bad += E[i] != wantE[i];
    edges += wantE[i] != 0.0f;
  }
  llvm_hpvm_untrack_mem(I);
  llvm_hpvm_untrack_mem(B);
  llvm_hpvm_untrack_mem(G);
  llvm_hpvm_untrack_mem(E);
  __hpvm__cleanup();
  printf("image_pipeline %ldx%ld: %d wrong, %d edge pixels, out.bytesE=%zu\n", m, n, bad, edges,
         args->out.bytesE);
  return bad != 0 || args->out.bytesE != bytes;
}
