/* The I/O of the sgemm_files example (Parboil's io.cc reads its matrices the same way):
   C++ streams, std::vector, std::string. */
#include <fstream>
#include <iostream>

#include "matrix_io.h"

bool readColMajorMatrixFile(const std::string &path, int &rows, int &cols, std::vector<float> &values) {
  std::ifstream in(path);
  if (!in.good()) {
    std::cerr << "cannot open " << path << std::endl;
    return false;
  }
  in >> rows >> cols;
  if (!in || rows <= 0 || cols <= 0) {
    std::cerr << path << ": no matrix size at the start" << std::endl;
    return false;
  }
  values.clear();
  values.reserve(static_cast<size_t>(rows) * cols);
  float v;
  while (values.size() < values.capacity() && in >> v) values.push_back(v);
  if (values.size() != static_cast<size_t>(rows) * cols) {
    std::cerr << path << ": " << values.size() << " values, " << rows * cols << " expected" << std::endl;
    return false;
  }
  std::cerr << "read " << path << ": " << rows << "x" << cols << std::endl;
  return true;
}

bool writeColMajorMatrixFile(const std::string &path, int rows, int cols, const std::vector<float> &values) {
  std::ofstream out(path);
  if (!out.good()) return false;
  out << rows << " " << cols << "\n";
  for (size_t i = 0; i < values.size(); ++i) out << values[i] << (i + 1 == values.size() ? "\n" : " ");
  return out.good();
}
