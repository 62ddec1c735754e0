// The LBM program's host steps (main.cpp), in the order main calls them.
#ifndef LBM_MAIN_H
#define LBM_MAIN_H

#include <parboil.h>

#include <vector>

#include "lbm_macros.h"

typedef struct {
  int nTimeSteps;
  const char *resultFilename;
  const char *obstacleFilename;  // NULL: the empty cavity
} MAIN_Param;

bool MAIN_parseCommandLine(int nArgs, char *arg[], MAIN_Param *param, struct pb_Parameters *params);
void MAIN_printInfo(const MAIN_Param *param);
bool MAIN_initialize(const MAIN_Param *param, std::vector<float> &srcMemory, std::vector<float> &dstMemory);
void MAIN_performStreamCollide(LBM_Grid src, LBM_Grid dst);
bool MAIN_finalize(const MAIN_Param *param);

#endif
