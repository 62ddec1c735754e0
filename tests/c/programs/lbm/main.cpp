// A lattice Boltzmann fluid (D3Q19, BGK collision) in a lid-driven cavity, written as
// parboil's LBM is written for HPVM: this file holds the graph and the host, lbm.cpp the
// lattice's host-side routines, the headers the layout and the access macros.
//
// The graph has three levels under the root, as HPVM's LBM builds them: the root lbmLvl3
// creates lbmLvl2 once (no replication), lbmLvl2 replicates lbmLvl1 over the box's rows
// and planes (SIZE_Y x SIZE_Z), and lbmLvl1 replicates the leaf over a row (SIZE_X x 1).
// The leaf finds its cell from its own instance id (x) and its parent's (y, z), gathers
// the nineteen distributions streaming into it from the source grid, bounces them back if
// the cell is a wall or relaxes them toward equilibrium if it is fluid, and writes them to
// its own cell of the destination grid. The host launches the graph once per time step and
// swaps the two grids between launches.
//
// The grids' ports are the tracked memory, which begins MARGIN floats before the grid the
// host works with; the leaf moves its pointers forward by MARGIN and then reads at
// negative offsets from its cell (the row, plane and entry before it).
//
// Usage: lbm [-i OBSTACLES] -o RESULT STEPS
#include <hpvm.h>
#include <parboil.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lbm.h"
#include "main.h"

// The planes each launch covers: the box's, unless a test builds the program with
// -D LAUNCH_PLANES=... to launch over more planes than the grid holds (the bounds check
// refuses that launch before the leaf runs).
#ifndef LAUNCH_PLANES
#define LAUNCH_PLANES SIZE_Z
#endif

static LBM_Grid srcGrid, dstGrid;

struct pb_TimerSet timers;

typedef struct __attribute__((__packed__)) {
  float *srcG;
  size_t bytes_srcG;
  float *dstG;
  size_t bytes_dstG;
  size_t dim_X1, dim_X2, dim_Y2;  // a row's cells; the rows and the planes
} RootIn;

void performStreamCollide_kernel(float *srcG, size_t bytes_srcG, float *dstG, size_t bytes_dstG) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(2, srcG, dstG, 1, dstG);
  void *thisNode = __hpvm__getNode();
  void *parentNode = __hpvm__getParentNode(thisNode);

  srcG += MARGIN;
  dstG += MARGIN;

  int x = __hpvm__getNodeInstanceID_x(thisNode);
  int y = __hpvm__getNodeInstanceID_x(parentNode);
  int z = __hpvm__getNodeInstanceID_y(parentNode);

  // Stream: what arrives here in each direction left the neighbour behind it last step.
  float fC = PULL(srcG, x, y, z, 0, 0, 0, C);
  float fN = PULL(srcG, x, y, z, 0, +1, 0, N);
  float fS = PULL(srcG, x, y, z, 0, -1, 0, S);
  float fE = PULL(srcG, x, y, z, +1, 0, 0, E);
  float fW = PULL(srcG, x, y, z, -1, 0, 0, W);
  float fT = PULL(srcG, x, y, z, 0, 0, +1, T);
  float fB = PULL(srcG, x, y, z, 0, 0, -1, B);
  float fNE = PULL(srcG, x, y, z, +1, +1, 0, NE);
  float fNW = PULL(srcG, x, y, z, -1, +1, 0, NW);
  float fSE = PULL(srcG, x, y, z, +1, -1, 0, SE);
  float fSW = PULL(srcG, x, y, z, -1, -1, 0, SW);
  float fNT = PULL(srcG, x, y, z, 0, +1, +1, NT);
  float fNB = PULL(srcG, x, y, z, 0, +1, -1, NB);
  float fST = PULL(srcG, x, y, z, 0, -1, +1, ST);
  float fSB = PULL(srcG, x, y, z, 0, -1, -1, SB);
  float fET = PULL(srcG, x, y, z, +1, 0, +1, ET);
  float fEB = PULL(srcG, x, y, z, +1, 0, -1, EB);
  float fWT = PULL(srcG, x, y, z, -1, 0, +1, WT);
  float fWB = PULL(srcG, x, y, z, -1, 0, -1, WB);

  unsigned flags = FLAG_BITS(srcG, x, y, z);
  if (flags & OBSTACLE) {
    // Bounce-back: each direction leaves with what came in along its opposite.
    float swap;
    swap = fN, fN = fS, fS = swap;
    swap = fE, fE = fW, fW = swap;
    swap = fT, fT = fB, fB = swap;
    swap = fNE, fNE = fSW, fSW = swap;
    swap = fNW, fNW = fSE, fSE = swap;
    swap = fNT, fNT = fSB, fSB = swap;
    swap = fNB, fNB = fST, fST = swap;
    swap = fET, fET = fWB, fWB = swap;
    swap = fEB, fEB = fWT, fWT = swap;
  } else {
    // Collide: the cell's density and velocity, then each distribution relaxed toward the
    // equilibrium they give. The lid's velocity is imposed, not computed.
    float rho = fC + fN + fS + fE + fW + fT + fB + fNE + fNW + fSE + fSW + fNT + fNB + fST + fSB + fET + fEB +
                fWT + fWB;
    float ux = (fE - fW + fNE - fNW + fSE - fSW + fET + fEB - fWT - fWB) / rho;
    float uy = (fN - fS + fNE + fNW - fSE - fSW + fNT + fNB - fST - fSB) / rho;
    float uz = (fT - fB + fNT - fNB + fST - fSB + fET - fEB + fWT - fWB) / rho;
    if (flags & ACCEL) {
      ux = LID_UX;
      uy = LID_UY;
      uz = LID_UZ;
    }
    float usq = 1.5f * (ux * ux + uy * uy + uz * uz);
    fC = RELAX(fC, WEIGHT_REST, rho, 0.0f, usq);
    fN = RELAX(fN, WEIGHT_AXIS, rho, +uy, usq);
    fS = RELAX(fS, WEIGHT_AXIS, rho, -uy, usq);
    fE = RELAX(fE, WEIGHT_AXIS, rho, +ux, usq);
    fW = RELAX(fW, WEIGHT_AXIS, rho, -ux, usq);
    fT = RELAX(fT, WEIGHT_AXIS, rho, +uz, usq);
    fB = RELAX(fB, WEIGHT_AXIS, rho, -uz, usq);
    fNE = RELAX(fNE, WEIGHT_DIAG, rho, +ux + uy, usq);
    fNW = RELAX(fNW, WEIGHT_DIAG, rho, -ux + uy, usq);
    fSE = RELAX(fSE, WEIGHT_DIAG, rho, +ux - uy, usq);
    fSW = RELAX(fSW, WEIGHT_DIAG, rho, -ux - uy, usq);
    fNT = RELAX(fNT, WEIGHT_DIAG, rho, +uy + uz, usq);
    fNB = RELAX(fNB, WEIGHT_DIAG, rho, +uy - uz, usq);
    fST = RELAX(fST, WEIGHT_DIAG, rho, -uy + uz, usq);
    fSB = RELAX(fSB, WEIGHT_DIAG, rho, -uy - uz, usq);
    fET = RELAX(fET, WEIGHT_DIAG, rho, +ux + uz, usq);
    fEB = RELAX(fEB, WEIGHT_DIAG, rho, +ux - uz, usq);
    fWT = RELAX(fWT, WEIGHT_DIAG, rho, -ux + uz, usq);
    fWB = RELAX(fWB, WEIGHT_DIAG, rho, -ux - uz, usq);
  }

  // Each instance writes only its own cell.
  GRID_ENTRY(dstG, x, y, z, C) = fC;
  GRID_ENTRY(dstG, x, y, z, N) = fN;
  GRID_ENTRY(dstG, x, y, z, S) = fS;
  GRID_ENTRY(dstG, x, y, z, E) = fE;
  GRID_ENTRY(dstG, x, y, z, W) = fW;
  GRID_ENTRY(dstG, x, y, z, T) = fT;
  GRID_ENTRY(dstG, x, y, z, B) = fB;
  GRID_ENTRY(dstG, x, y, z, NE) = fNE;
  GRID_ENTRY(dstG, x, y, z, NW) = fNW;
  GRID_ENTRY(dstG, x, y, z, SE) = fSE;
  GRID_ENTRY(dstG, x, y, z, SW) = fSW;
  GRID_ENTRY(dstG, x, y, z, NT) = fNT;
  GRID_ENTRY(dstG, x, y, z, NB) = fNB;
  GRID_ENTRY(dstG, x, y, z, ST) = fST;
  GRID_ENTRY(dstG, x, y, z, SB) = fSB;
  GRID_ENTRY(dstG, x, y, z, ET) = fET;
  GRID_ENTRY(dstG, x, y, z, EB) = fEB;
  GRID_ENTRY(dstG, x, y, z, WT) = fWT;
  GRID_ENTRY(dstG, x, y, z, WB) = fWB;
}

// One row: the leaf over its cells (a 2-D node one instance high, as HPVM's LBM makes it).
void lbmLvl1(float *srcG, size_t bytes_srcG, float *dstG, size_t bytes_dstG, size_t dim_X1) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(2, srcG, dstG, 1, dstG);
  void *lbm_node = __hpvm__createNodeND(2, performStreamCollide_kernel, dim_X1, (size_t)1);
  __hpvm__bindIn(lbm_node, 0, 0, 0);
  __hpvm__bindIn(lbm_node, 1, 1, 0);
  __hpvm__bindIn(lbm_node, 2, 2, 0);
  __hpvm__bindIn(lbm_node, 3, 3, 0);
}

// The box: one row node per (y, z).
void lbmLvl2(float *srcG, size_t bytes_srcG, float *dstG, size_t bytes_dstG, size_t dim_X1, size_t dim_X2,
             size_t dim_Y2) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, srcG, dstG, 1, dstG);
  void *lbm_node = __hpvm__createNodeND(2, lbmLvl1, dim_X2, dim_Y2);
  __hpvm__bindIn(lbm_node, 0, 0, 0);
  __hpvm__bindIn(lbm_node, 1, 1, 0);
  __hpvm__bindIn(lbm_node, 2, 2, 0);
  __hpvm__bindIn(lbm_node, 3, 3, 0);
  __hpvm__bindIn(lbm_node, 4, 4, 0);
}

// The root: the box node once.
void lbmLvl3(float *srcG, size_t bytes_srcG, float *dstG, size_t bytes_dstG, size_t dim_X1, size_t dim_X2,
             size_t dim_Y2) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, srcG, dstG, 1, dstG);
  void *lbm_node = __hpvm__createNodeND(0, lbmLvl2);
  __hpvm__bindIn(lbm_node, 0, 0, 0);
  __hpvm__bindIn(lbm_node, 1, 1, 0);
  __hpvm__bindIn(lbm_node, 2, 2, 0);
  __hpvm__bindIn(lbm_node, 3, 3, 0);
  __hpvm__bindIn(lbm_node, 4, 4, 0);
  __hpvm__bindIn(lbm_node, 5, 5, 0);
  __hpvm__bindIn(lbm_node, 6, 6, 0);
}

static int usage(const char *why) {
  std::fprintf(stderr, "lbm: %s\nUsage: lbm [-i OBSTACLES] -o RESULT STEPS\n", why);
  return 1;
}

bool MAIN_parseCommandLine(int nArgs, char *arg[], MAIN_Param *param, struct pb_Parameters *params) {
  if (params == NULL) return usage("bad options") == 0;  // pb_ReadParameters said which
  if (nArgs != 2) return usage("give the number of time steps") == 0;
  param->nTimeSteps = std::atoi(arg[1]);
  if (param->nTimeSteps < 1) return usage("the number of time steps must be at least 1") == 0;
  if (params->outFile == NULL) return usage("no result file: name one with -o") == 0;
  param->resultFilename = params->outFile;
  param->obstacleFilename = params->inpFiles[0];
  if (param->obstacleFilename != NULL && params->inpFiles[1] != NULL)
    return usage("one obstacle file at most after -i") == 0;
  return true;
}

void MAIN_printInfo(const MAIN_Param *param) {
  std::printf("lbm: %dx%dx%d cells, %d time steps, lid-driven cavity, obstacles %s, result %s\n", SIZE_X,
              SIZE_Y, SIZE_Z, param->nTimeSteps, param->obstacleFilename ? param->obstacleFilename : "<none>",
              param->resultFilename);
}

bool MAIN_initialize(const MAIN_Param *param, std::vector<float> &srcMemory, std::vector<float> &dstMemory) {
  pb_SwitchToTimer(&timers, pb_TimerID_COMPUTE);
  srcGrid = LBM_allocateGrid(srcMemory);
  dstGrid = LBM_allocateGrid(dstMemory);
  LBM_initializeGrid(srcGrid);
  LBM_initializeGrid(dstGrid);

  // Both grids carry the flags: the leaf reads them from whichever is the source.
  pb_SwitchToTimer(&timers, pb_TimerID_IO);
  if (param->obstacleFilename != NULL) {
    std::string error;
    if (!LBM_loadObstacleFile(srcGrid, param->obstacleFilename, error) ||
        !LBM_loadObstacleFile(dstGrid, param->obstacleFilename, error)) {
      std::fprintf(stderr, "lbm: %s\n", error.c_str());
      return false;
    }
  }

  pb_SwitchToTimer(&timers, pb_TimerID_COMPUTE);
  LBM_initializeSpecialCellsForLDC(srcGrid);
  LBM_initializeSpecialCellsForLDC(dstGrid);
  LBM_showGridStatistics(srcGrid);
  return true;
}

// One time step: one launch of the graph over the two grids, waited for. (noinline, as
// HPVM's LBM marks it: the launch stays one call in main's loop.)
__attribute__((noinline)) void MAIN_performStreamCollide(LBM_Grid src, LBM_Grid dst) {
  size_t bytes = (size_t)TOTAL_PADDED_CELLS * N_CELL_ENTRIES * sizeof(float);
  RootIn *root_in = (RootIn *)std::malloc(sizeof(RootIn));
  *root_in = RootIn{src - MARGIN, bytes, dst - MARGIN, bytes, SIZE_X, SIZE_Y, LAUNCH_PLANES};
  void *lbmDFG = __hpvm__launch(0, lbmLvl3, (void *)root_in);
  __hpvm__wait(lbmDFG);
  std::free(root_in);
}

bool MAIN_finalize(const MAIN_Param *param) {
  LBM_showGridStatistics(srcGrid);
  pb_SwitchToTimer(&timers, pb_TimerID_IO);
  bool stored = LBM_storeVelocityField(srcGrid, param->resultFilename);
  pb_SwitchToTimer(&timers, pb_TimerID_NONE);
  if (!stored) std::fprintf(stderr, "lbm: cannot write the result file '%s'\n", param->resultFilename);
  return stored;
}

int main(int nArgs, char *arg[]) {
  struct pb_Parameters *params = pb_ReadParameters(&nArgs, arg);
  MAIN_Param param;
  if (!MAIN_parseCommandLine(nArgs, arg, &param, params)) {
    if (params != NULL) pb_FreeParameters(params);
    return 1;
  }
  MAIN_printInfo(&param);

  pb_InitializeTimerSet(&timers);
  std::vector<float> srcMemory, dstMemory;
  if (!MAIN_initialize(&param, srcMemory, dstMemory)) {
    pb_FreeParameters(params);
    return 1;
  }

  __hpvm__init();
  size_t bytes = (size_t)TOTAL_PADDED_CELLS * N_CELL_ENTRIES * sizeof(float);
  pb_SwitchToTimer(&timers, hpvm_TimerID_MEM_TRACK);
  llvm_hpvm_track_mem(srcGrid - MARGIN, bytes);
  llvm_hpvm_track_mem(dstGrid - MARGIN, bytes);

  for (int t = 1; t <= param.nTimeSteps; t++) {
    pb_SwitchToTimer(&timers, pb_TimerID_KERNEL);
    MAIN_performStreamCollide(srcGrid, dstGrid);
    pb_SwitchToTimer(&timers, pb_TimerID_COMPUTE);
    LBM_swapGrids(&srcGrid, &dstGrid);  // this step's result is the next step's source
  }

  pb_SwitchToTimer(&timers, pb_TimerID_COPY);
  llvm_hpvm_request_mem(srcGrid - MARGIN, bytes);
  pb_SwitchToTimer(&timers, hpvm_TimerID_MEM_UNTRACK);
  llvm_hpvm_untrack_mem(srcGrid - MARGIN);
  llvm_hpvm_untrack_mem(dstGrid - MARGIN);
  pb_SwitchToTimer(&timers, pb_TimerID_NONE);
  pb_PrintTimerSet(&timers);
  __hpvm__cleanup();

  bool stored = MAIN_finalize(&param);
  pb_FreeParameters(params);
  return stored ? 0 : 1;
}
