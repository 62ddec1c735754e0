/*
 * tensorUtils.h -- HPVM's DNN programs include this header of HPVM's tensor runtime for its
 * file and accuracy helpers (readTrainedWeights, readInputBatch, readLabels...,
 * computeAccuracy3). Here tensor_runtime.h declares them all (answered by hpvm's runtime,
 * not defined in a header as HPVM's are), so this file includes it, and, in C++, the
 * standard headers of what HPVM's DNN programs use without including it themselves
 * (std::string, std::ofstream, std::fixed, std::cerr, getopt): HPVM's tensorUtils.h brings
 * them in (with <bits/stdc++.h>, libstdc++'s everything, which zig's libc++ does not have).
 * Parsing them costs clang a few seconds; include tensor_runtime.h instead where they are
 * not needed.
 */
#ifndef HPVM_C_TENSOR_UTILS_H
#define HPVM_C_TENSOR_UTILS_H
#ifdef __cplusplus
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <unistd.h>
#endif
#include "tensor_runtime.h"
#endif /* HPVM_C_TENSOR_UTILS_H */
