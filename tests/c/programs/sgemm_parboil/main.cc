// A dense matrix multiply written as parboil's sgemm is for HPVM: one main.cc holding the
// graph and the host, the matrices read from the files named by -i (A column-major,
// then B transposed, column-major: parboil's "rows cols" header and the values), C written
// to -o, the timer set switched around reading, tracking, launch and wait, and printed.
// The graph: a root creating a 2-D grid of tiles once, each tile a 2-D block of the
// mysgemmNT leaf (C = alpha * A * B^T + beta * C, one element per instance).
// Usage: sgemm -i A,BT -o C
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <vector>

#include <hpvm.h>
#include <parboil.h>

#define TILE_SZ 16

static bool readColMajorMatrixFile(const char *fn, int &rows, int &cols, std::vector<float> &v) {
  std::fstream f(fn, std::fstream::in);
  if (!f.good()) return false;
  f >> rows >> cols;
  v.resize((size_t)rows * cols);
  for (float &x : v) f >> x;
  return f.good() || f.eof();
}

static bool writeColMajorMatrixFile(const char *fn, int rows, int cols, const std::vector<float> &v) {
  std::fstream f(fn, std::fstream::out);
  if (!f.good()) return false;
  f << rows << " " << cols << "\n";
  for (float x : v) f << x << "\n";
  return true;
}

typedef struct __attribute__((__packed__)) {
  float *A;
  size_t bytesA;
  int lda;
  float *B;
  size_t bytesB;
  int ldb;
  float *C;
  size_t bytesC;
  int ldc;
  int k;
  float alpha;
  float beta;
  size_t dim_X1, dim_Y1, dim_X2, dim_Y2;
} RootIn;

void mysgemmNT(float *A, size_t bytesA, int lda, float *B, size_t bytesB, int ldb, float *C, size_t bytesC,
               int ldc, int k, float alpha, float beta) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(3, A, B, C, 1, C);
  void *thisNode = __hpvm__getNode();
  void *parentNode = __hpvm__getParentNode(thisNode);
  int lx = __hpvm__getNodeInstanceID_x(thisNode);
  int ly = __hpvm__getNodeInstanceID_y(thisNode);
  int gx = __hpvm__getNodeInstanceID_x(parentNode);
  int gy = __hpvm__getNodeInstanceID_y(parentNode);
  int dimx = __hpvm__getNumNodeInstances_x(thisNode);
  int dimy = __hpvm__getNumNodeInstances_y(thisNode);
  int m = gx * dimx + lx;
  int n = gy * dimy + ly;
  float c = 0.0f;
  for (int i = 0; i < k; ++i) {
    float a = A[m + i * lda];
    float b = B[n + i * ldb];
    c += a * b;
  }
  C[m + n * ldc] = C[m + n * ldc] * beta + alpha * c;
}

void basicSgemmLvl1(float *A, size_t bytesA, int lda, float *B, size_t bytesB, int ldb, float *C,
                    size_t bytesC, int ldc, int k, float alpha, float beta, size_t dim_X1, size_t dim_Y1) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, A, B, C, 1, C);
  void *sgemm = __hpvm__createNodeND(2, mysgemmNT, dim_X1, dim_Y1);
  for (int port = 0; port < 12; port++) __hpvm__bindIn(sgemm, port, port, 0);
}

void basicSgemmLvl2(float *A, size_t bytesA, int lda, float *B, size_t bytesB, int ldb, float *C,
                    size_t bytesC, int ldc, int k, float alpha, float beta, size_t dim_X1, size_t dim_Y1,
                    size_t dim_X2, size_t dim_Y2) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, A, B, C, 1, C);
  void *tiles = __hpvm__createNodeND(2, basicSgemmLvl1, dim_X2, dim_Y2);
  for (int port = 0; port < 14; port++) __hpvm__bindIn(tiles, port, port, 0);
}

void root(float *A, size_t bytesA, int lda, float *B, size_t bytesB, int ldb, float *C, size_t bytesC, int ldc,
          int k, float alpha, float beta, size_t dim_X1, size_t dim_Y1, size_t dim_X2, size_t dim_Y2) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, A, B, C, 1, C);
  void *grid = __hpvm__createNodeND(0, basicSgemmLvl2);
  for (int port = 0; port < 16; port++) __hpvm__bindIn(grid, port, port, 0);
}

int main(int argc, char *argv[]) {
  struct pb_Parameters *params = pb_ReadParameters(&argc, argv);
  if (params == NULL) return 1;
  if (params->inpFiles[0] == NULL || params->inpFiles[1] == NULL || params->outFile == NULL) {
    std::fprintf(stderr, "Usage: sgemm -i A,BT -o C\n");
    pb_FreeParameters(params);
    return 1;
  }
  struct pb_TimerSet timers;
  pb_InitializeTimerSet(&timers);

  int matArow, matAcol, matBrow, matBcol;
  std::vector<float> matA, matBT;
  pb_SwitchToTimer(&timers, pb_TimerID_IO);
  if (!readColMajorMatrixFile(params->inpFiles[0], matArow, matAcol, matA) ||
      !readColMajorMatrixFile(params->inpFiles[1], matBcol, matBrow, matBT)) {
    std::fprintf(stderr, "sgemm: cannot read %s or %s\n", params->inpFiles[0], params->inpFiles[1]);
    pb_FreeParameters(params);
    return 1;
  }
  if (matAcol != matBrow || matArow % TILE_SZ || matBcol % TILE_SZ) {
    std::fprintf(stderr, "sgemm: A is %dx%d and B %dx%d: need A's columns = B's rows, rows and columns of C "
                 "multiples of %d\n", matArow, matAcol, matBrow, matBcol, TILE_SZ);
    pb_FreeParameters(params);
    return 1;
  }

  pb_SwitchToTimer(&timers, pb_TimerID_COMPUTE);
  std::vector<float> matC((size_t)matArow * matBcol, 0.0f);
  size_t bytesA = matA.size() * sizeof(float), bytesB = matBT.size() * sizeof(float);
  size_t bytesC = matC.size() * sizeof(float);
  __hpvm__init();
  pb_SwitchToTimer(&timers, hpvm_TimerID_MEM_TRACK);
  llvm_hpvm_track_mem(matA.data(), bytesA);
  llvm_hpvm_track_mem(matBT.data(), bytesB);
  llvm_hpvm_track_mem(matC.data(), bytesC);

  pb_SwitchToTimer(&timers, pb_TimerID_KERNEL);
  RootIn *args = (RootIn *)std::malloc(sizeof(RootIn));
  *args = RootIn{matA.data(), bytesA, matArow, matBT.data(), bytesB, matBcol, matC.data(), bytesC, matArow,
                 matAcol, 1.0f, 0.0f, TILE_SZ, TILE_SZ, (size_t)matArow / TILE_SZ, (size_t)matBcol / TILE_SZ};
  void *sgemmDFG = __hpvm__launch(0, root, (void *)args);
  __hpvm__wait(sgemmDFG);

  pb_SwitchToTimer(&timers, pb_TimerID_COPY);
  llvm_hpvm_request_mem(matC.data(), bytesC);
  pb_SwitchToTimer(&timers, hpvm_TimerID_MEM_UNTRACK);
  llvm_hpvm_untrack_mem(matA.data());
  llvm_hpvm_untrack_mem(matBT.data());
  llvm_hpvm_untrack_mem(matC.data());
  std::free(args);
  __hpvm__cleanup();

  pb_SwitchToTimer(&timers, pb_TimerID_IO);
  bool written = writeColMajorMatrixFile(params->outFile, matArow, matBcol, matC);
  pb_SwitchToTimer(&timers, pb_TimerID_NONE);
  double seconds = pb_GetElapsedTime(&timers.timers[pb_TimerID_KERNEL]);
  std::printf("sgemm %dx%dx%d: GFLOPs = %.3f\n", matArow, matBcol, matAcol,
              2.0 * matArow * matBcol * matAcol / (seconds > 0 ? seconds : 1e-9) / 1e9);
  pb_PrintTimerSet(&timers);
  pb_FreeParameters(params);
  return written ? 0 : 1;
}
