// A four-stage edge pipeline streamed from main, written as HPVM's pipeline benchmark writes
// its stages: each stage a wrapper node (WrapperBrighten ...) that replicates a leaf 2-D over
// a grid rounded up to whole 8x8 blocks, the leaf's body under the bounds guard
// `if ((gx < n) && (gy < m))` (x the column, the fastest index), every stage receiving the
// byte count of the array it reads over a streaming edge from the stage that wrote it, and
// the arrays bound to the stages as streamed inputs. Per pixel: brighten (gain, clamped to
// [0, 1]), horizontal gradient (clamped borders), threshold, and the brightened pixel kept
// where there is an edge. The host launches the graph as a stream (__hpvm__launch(1, ...)),
// pushes FRAMES frames, each with buffers of its own (std::vector), then pops them all, and
// recomputes every frame itself.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "hpvm.h"

#ifndef FRAMES
#define FRAMES 6
#endif

struct out_t {
  size_t bytesO;
};

typedef struct __attribute__((__packed__)) {
  float *I;       // 0
  size_t bytesI;  // 1
  float *B;       // 2
  size_t bytesB;  // 3
  float *G;       // 4
  size_t bytesG;  // 5
  float *E;       // 6
  size_t bytesE;  // 7
  float *O;       // 8
  size_t bytesO;  // 9
  float gain;     // 10
  float t;        // 11
  long m;         // 12
  long n;         // 13
  long gridx;     // 14
  long gridy;     // 15
  struct out_t out;
} RootIn;

void brighten(float *I, size_t bytesI, float *B, size_t bytesB, float gain, long m, long n) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, I, 1, B);
  void *thisNode = __hpvm__getNode();
  long gx = __hpvm__getNodeInstanceID_x(thisNode);
  long gy = __hpvm__getNodeInstanceID_y(thisNode);
  if ((gx < n) && (gy < m)) {
    float v = I[gy * n + gx] * gain;
    B[gy * n + gx] = v > 1.0f ? 1.0f : v;
  }
  __hpvm__return(1, bytesB);
}

void gradient(float *B, size_t bytesB, float *G, size_t bytesG, long m, long n) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, B, 1, G);
  void *thisNode = __hpvm__getNode();
  long gx = __hpvm__getNodeInstanceID_x(thisNode);
  long gy = __hpvm__getNodeInstanceID_y(thisNode);
  if ((gx < n) && (gy < m)) {
    long left = gx > 0 ? gx - 1 : 0;
    long right = gx < n - 1 ? gx + 1 : n - 1;
    G[gy * n + gx] = std::fabs(B[gy * n + right] - B[gy * n + left]);
  }
  __hpvm__return(1, bytesG);
}

void threshold(float *G, size_t bytesG, float *E, size_t bytesE, float t, long m, long n) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, G, 1, E);
  void *thisNode = __hpvm__getNode();
  long gx = __hpvm__getNodeInstanceID_x(thisNode);
  long gy = __hpvm__getNodeInstanceID_y(thisNode);
  if ((gx < n) && (gy < m)) E[gy * n + gx] = G[gy * n + gx] > t ? 1.0f : 0.0f;
  __hpvm__return(1, bytesE);
}

void mask(float *B, size_t bytesB, float *E, size_t bytesE, float *O, size_t bytesO, long m, long n) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, B, E, 1, O);
  void *thisNode = __hpvm__getNode();
  long gx = __hpvm__getNodeInstanceID_x(thisNode);
  long gy = __hpvm__getNodeInstanceID_y(thisNode);
  if ((gx < n) && (gy < m)) O[gy * n + gx] = B[gy * n + gx] * E[gy * n + gx];
  __hpvm__return(1, bytesO);
}

void WrapperBrighten(float *I, size_t bytesI, float *B, size_t bytesB, float gain, long m, long n,
                     long gridx, long gridy) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, I, 1, B);
  void *node = __hpvm__createNodeND(2, brighten, gridx, gridy);
  for (int p = 0; p < 7; p++) __hpvm__bindIn(node, p, p, 0);
  __hpvm__bindOut(node, 0, 0, 0);
}

void WrapperGradient(float *B, size_t bytesB, float *G, size_t bytesG, long m, long n, long gridx,
                     long gridy) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, B, 1, G);
  void *node = __hpvm__createNodeND(2, gradient, gridx, gridy);
  for (int p = 0; p < 6; p++) __hpvm__bindIn(node, p, p, 0);
  __hpvm__bindOut(node, 0, 0, 0);
}

void WrapperThreshold(float *G, size_t bytesG, float *E, size_t bytesE, float t, long m, long n,
                      long gridx, long gridy) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, G, 1, E);
  void *node = __hpvm__createNodeND(2, threshold, gridx, gridy);
  for (int p = 0; p < 7; p++) __hpvm__bindIn(node, p, p, 0);
  __hpvm__bindOut(node, 0, 0, 0);
}

void WrapperMask(float *B, size_t bytesB, float *E, size_t bytesE, float *O, size_t bytesO, long m,
                 long n, long gridx, long gridy) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, B, E, 1, O);
  void *node = __hpvm__createNodeND(2, mask, gridx, gridy);
  for (int p = 0; p < 8; p++) __hpvm__bindIn(node, p, p, 0);
  __hpvm__bindOut(node, 0, 0, 0);
}

void edgePipeline(float *I, size_t bytesI, float *B, size_t bytesB, float *G, size_t bytesG, float *E,
                  size_t bytesE, float *O, size_t bytesO, float gain, float t, long m, long n,
                  long gridx, long gridy) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, I, 4, B, G, E, O);
  void *BNode = __hpvm__createNodeND(0, WrapperBrighten);
  void *GNode = __hpvm__createNodeND(0, WrapperGradient);
  void *TNode = __hpvm__createNodeND(0, WrapperThreshold);
  void *MNode = __hpvm__createNodeND(0, WrapperMask);

  __hpvm__bindIn(BNode, 0, 0, 1);   // I
  __hpvm__bindIn(BNode, 1, 1, 1);   // bytesI
  __hpvm__bindIn(BNode, 2, 2, 1);   // B
  __hpvm__bindIn(BNode, 3, 3, 1);   // bytesB
  __hpvm__bindIn(BNode, 10, 4, 1);  // gain
  __hpvm__bindIn(BNode, 12, 5, 1);  // m
  __hpvm__bindIn(BNode, 13, 6, 1);  // n
  __hpvm__bindIn(BNode, 14, 7, 1);  // gridx
  __hpvm__bindIn(BNode, 15, 8, 1);  // gridy

  __hpvm__bindIn(GNode, 2, 0, 1);          // B
  __hpvm__edge(BNode, GNode, 1, 0, 1, 1);  // bytesB, streamed: B is written
  __hpvm__bindIn(GNode, 4, 2, 1);          // G
  __hpvm__bindIn(GNode, 5, 3, 1);          // bytesG
  __hpvm__bindIn(GNode, 12, 4, 1);         // m
  __hpvm__bindIn(GNode, 13, 5, 1);         // n
  __hpvm__bindIn(GNode, 14, 6, 1);         // gridx
  __hpvm__bindIn(GNode, 15, 7, 1);         // gridy

  __hpvm__bindIn(TNode, 4, 0, 1);          // G
  __hpvm__edge(GNode, TNode, 1, 0, 1, 1);  // bytesG
  __hpvm__bindIn(TNode, 6, 2, 1);          // E
  __hpvm__bindIn(TNode, 7, 3, 1);          // bytesE
  __hpvm__bindIn(TNode, 11, 4, 1);         // t
  __hpvm__bindIn(TNode, 12, 5, 1);         // m
  __hpvm__bindIn(TNode, 13, 6, 1);         // n
  __hpvm__bindIn(TNode, 14, 7, 1);         // gridx
  __hpvm__bindIn(TNode, 15, 8, 1);         // gridy

  __hpvm__bindIn(MNode, 2, 0, 1);          // B
  __hpvm__bindIn(MNode, 3, 1, 1);          // bytesB
  __hpvm__bindIn(MNode, 6, 2, 1);          // E
  __hpvm__edge(TNode, MNode, 1, 0, 3, 1);  // bytesE
  __hpvm__bindIn(MNode, 8, 4, 1);          // O
  __hpvm__bindIn(MNode, 9, 5, 1);          // bytesO
  __hpvm__bindIn(MNode, 12, 6, 1);         // m
  __hpvm__bindIn(MNode, 13, 7, 1);         // n
  __hpvm__bindIn(MNode, 14, 8, 1);         // gridx
  __hpvm__bindIn(MNode, 15, 9, 1);         // gridy

  __hpvm__bindOut(MNode, 0, 0, 1);  // bytesO
}

struct Frame {
  std::vector<float> I, B, G, E, O;
  explicit Frame(long pixels) : I(pixels), B(pixels, -1.0f), G(pixels, -1.0f), E(pixels, -1.0f), O(pixels, -1.0f) {}
};

int main(int argc, char **argv) {
  long n = argc > 2 ? atol(argv[1]) : 45, m = argc > 2 ? atol(argv[2]) : 21;
  long gridx = (n + 7) / 8 * 8, gridy = (m + 7) / 8 * 8;  // whole 8x8 blocks
  long pixels = n * m;
  size_t bytes = pixels * sizeof(float);
  const float gain = 1.5f, t = 0.125f;
  std::vector<Frame> frames;
  frames.reserve(FRAMES);
  for (int f = 0; f < FRAMES; f++) {
    frames.emplace_back(pixels);
    for (long k = 0; k < pixels; k++) frames[f].I[k] = (float)((k * 37 + f * 101 + 11) % 257) / 257.0f;
  }
  __hpvm__init();
  std::vector<RootIn> args(FRAMES);
  void *graph = __hpvm__launch(1, edgePipeline, NULL);
  for (int f = 0; f < FRAMES; f++) {
    Frame &fr = frames[f];
    for (std::vector<float> *a : {&fr.I, &fr.B, &fr.G, &fr.E, &fr.O}) llvm_hpvm_track_mem(a->data(), bytes);
    args[f] = RootIn{fr.I.data(), bytes, fr.B.data(), bytes, fr.G.data(), bytes, fr.E.data(), bytes,
                     fr.O.data(), bytes, gain, t, m, n, gridx, gridy, {0}};
    __hpvm__push(graph, &args[f]);
  }
  int bad = 0;
  for (int f = 0; f < FRAMES; f++) {
    struct out_t *got = (struct out_t *)__hpvm__pop(graph);
    if (got->bytesO != bytes) bad++;
  }
  __hpvm__wait(graph);
  for (int f = 0; f < FRAMES; f++) {
    Frame &fr = frames[f];
    llvm_hpvm_request_mem(fr.O.data(), bytes);
    std::vector<float> b(pixels);
    for (long k = 0; k < pixels; k++) {
      float v = fr.I[k] * gain;
      b[k] = v > 1.0f ? 1.0f : v;
    }
    for (long y = 0; y < m; y++)
      for (long x = 0; x < n; x++) {
        long left = x > 0 ? x - 1 : 0, right = x < n - 1 ? x + 1 : n - 1;
        float g = std::fabs(b[y * n + right] - b[y * n + left]);
        float want = b[y * n + x] * (g > t ? 1.0f : 0.0f);
        if (fr.O[y * n + x] != want) bad++;
      }
    for (std::vector<float> *a : {&fr.I, &fr.B, &fr.G, &fr.E, &fr.O}) llvm_hpvm_untrack_mem(a->data());
  }
  __hpvm__cleanup();
  std::printf("edge stream %ldx%ld, %d frames: %d wrong\n", n, m, FRAMES, bad);
  return bad != 0;
}
