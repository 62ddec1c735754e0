/*
 * tensorUtils.h -- HPVM's DNN programs include this header of HPVM's tensor runtime for its
 * file and accuracy helpers (readTrainedWeights, readInputBatch, readLabels...,
 * computeAccuracy3). Here tensor_runtime.h declares them all (answered by hpvm's runtime,
 * not defined in a header as HPVM's are), so this file includes it, and, in C++, the
 * standard headers HPVM's tensorUtils.h and tensor_runtime.h bring in: HPVM's programs use
 * std::string, std::ofstream, std::cerr and getopt without including them themselves.
 */
#ifndef HPVM_C_TENSOR_UTILS_H
#define HPVM_C_TENSOR_UTILS_H
#ifdef __cplusplus
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>
#include <unistd.h>
#endif
#include "tensor_runtime.h"
#endif /* HPVM_C_TENSOR_UTILS_H */
