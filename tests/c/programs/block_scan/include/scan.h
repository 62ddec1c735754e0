/* The block scan's shapes, shared by the host (main.cc) and the graph (kernel.cc): each
   group of BLOCK instances scans 2 * BLOCK elements (GPU Gems 3, chapter 39: Blelloch's
   work-efficient scan, two elements per thread). */
#pragma once
#include <cstddef>

#ifndef BLOCK
#define BLOCK 64
#endif
#define ELEMS (2 * BLOCK)

struct __attribute__((__packed__)) ScanArgs {
  int *in;
  size_t bytes_in;
  int *out;
  size_t bytes_out;
  int *sums;
  size_t bytes_sums;
  long n;
  size_t bytes_tmp;
};

void scan_root(int *in, size_t bytes_in, int *out, size_t bytes_out, int *sums, size_t bytes_sums, long n,
               size_t bytes_tmp);
