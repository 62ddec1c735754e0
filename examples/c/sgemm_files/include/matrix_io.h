/* Matrix files of the sgemm_files example, in Parboil's format: the row and column counts,
   then the values in column-major order, separated by white space. */
#ifndef MATRIX_IO_H
#define MATRIX_IO_H

#include <string>
#include <vector>

/* Reads rows, cols and rows * cols values; false (with a message on std::cerr) if the file
   cannot be opened or holds fewer values. */
bool readColMajorMatrixFile(const std::string &path, int &rows, int &cols, std::vector<float> &values);

/* Writes rows, cols and the values; false if the file cannot be written. */
bool writeColMajorMatrixFile(const std::string &path, int rows, int cols, const std::vector<float> &values);

#endif
