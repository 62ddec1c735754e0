// Vector add in HPVM-C, as C++: hpvm::CPU_TARGET, C++ name mangling, extern "C" API.
#include <cstdio>
#include <cstdlib>
#include "hpvm.h"

struct RootIn {
  float *a;
  size_t bytes_a;
  float *b;
  size_t bytes_b;
  float *c;
  size_t bytes_c;
} __attribute__((__packed__));

void vector_add(float *a, size_t bytes_a, float *b, size_t bytes_b, float *c, size_t bytes_c) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, a, b, 1, c);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  c[i] = a[i] + b[i];
}

void root(float *a, size_t bytes_a, float *b, size_t bytes_b, float *c, size_t bytes_c) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, a, b, 1, c);
  void *add = __hpvm__createNodeND(1, vector_add, bytes_c / sizeof(float));
  for (unsigned p = 0; p < 6; p++) __hpvm__bindIn(add, p, p, 0);
}

int main() {
  const size_t n = 256, bytes = n * sizeof(float);
  float *a = static_cast<float *>(std::malloc(bytes));
  float *b = static_cast<float *>(std::malloc(bytes));
  float *c = static_cast<float *>(std::malloc(bytes));
  for (size_t i = 0; i < n; i++) {
    a[i] = float(i);
    b[i] = 1.5f * float(i);
  }
  __hpvm__init();
  RootIn args = {a, bytes, b, bytes, c, bytes};
  llvm_hpvm_track_mem(a, bytes);
  llvm_hpvm_track_mem(b, bytes);
  llvm_hpvm_track_mem(c, bytes);
  void *graph = __hpvm__launch(0, root, &args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(c, bytes);
  int bad = 0;
  for (size_t i = 0; i < n; i++) bad += c[i] != a[i] + b[i];
  llvm_hpvm_untrack_mem(a);
  llvm_hpvm_untrack_mem(b);
  llvm_hpvm_untrack_mem(c);
  __hpvm__cleanup();
  std::printf("vector_add (C++): %d wrong\n", bad);
  return bad != 0;
}
