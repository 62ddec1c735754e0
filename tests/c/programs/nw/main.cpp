// The host of the Needleman-Wunsch program, as Rodinia's nw host is written, ported to HPVM:
// the score and reference matrices in std::vectors tracked once, the borders filled with the
// gap penalties, then one __hpvm__launch + __hpvm__wait per anti-diagonal, each with a fresh
// argument struct whose diagonal, first row, length and block count change from launch to
// launch. It aligns several pairs of random sequences one after the other in the same
// tracked matrices (as a search aligns queries against a database), writing each pair's
// substitution scores into the reference matrix after requesting it back, and checks every
// cell of each pair's matrix against a plain row-by-row loop.
// Usage: nw rows cols [penalty [pairs]]   (the two sequences' lengths; Rodinia's penalty, 10)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "hpvm.h"
#include "needle.h"

static const int LETTERS = 20;
static const int UNSET = 1 << 29;  // no score reaches it: a cell left unwritten shows

static int usage() {
  std::fprintf(stderr, "Usage: nw rows cols [penalty [pairs]]\n"
                       "rows, cols: the two sequences' lengths (at least 1)\n"
                       "penalty: a gap's cost (10)\n"
                       "pairs: the pairs of sequences aligned one after the other (1)\n");
  return 1;
}

// A symmetric substitution score: a match scores 5 to 8, a mismatch -1 to -5.
static int substitution(int a, int b) { return a == b ? 5 + a % 4 : -1 - (a + b) % 5; }

// Rodinia draws its sequences with rand(); a fixed LCG makes them the same everywhere.
static void random_sequence(std::vector<int> &s, unsigned &seed) {
  for (size_t k = 0; k < s.size(); k++) {
    seed = seed * 1103515245u + 12345u;
    s[k] = (int)((seed >> 16) % LETTERS);
  }
}

static int maximum(int a, int b, int c) {
  int k = a > b ? a : b;
  return k > c ? k : c;
}

// The same recurrence, row by row.
static void reference_scores(std::vector<int> &want, const std::vector<int> &ref, long rows, long width,
                             int penalty) {
  for (long i = 0; i <= rows; i++) want[i * width] = -(int)i * penalty;
  for (long j = 0; j < width; j++) want[j] = -(int)j * penalty;
  for (long i = 1; i <= rows; i++)
    for (long j = 1; j < width; j++) {
      long here = i * width + j;
      want[here] = maximum(want[here - width - 1] + ref[here], want[here - width] - penalty,
                           want[here - 1] - penalty);
    }
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 5) return usage();
  long rows = std::atol(argv[1]), cols = std::atol(argv[2]);
  int penalty = argc > 3 ? std::atoi(argv[3]) : 10;
  int pairs = argc > 4 ? std::atoi(argv[4]) : 1;
  if (rows < 1 || cols < 1 || penalty < 0 || pairs < 1) return usage();
  long width = cols + 1;
  size_t count = (size_t)(rows + 1) * width, bytes = count * sizeof(int);

  std::vector<int> score(count, UNSET), ref(count, 0), want(count);
  std::vector<int> a(rows), b(cols);
  for (long i = 0; i <= rows; i++) score[i * width] = -(int)i * penalty;
  for (long j = 0; j <= cols; j++) score[j] = -(int)j * penalty;

  __hpvm__init();
  llvm_hpvm_track_mem(score.data(), bytes);
  llvm_hpvm_track_mem(ref.data(), bytes);
  RootIn *args = (RootIn *)std::malloc(sizeof(RootIn));
  unsigned seed = 2026;
  int launches = 0, wrong = 0, wrongReturns = 0;
  long widest = 0;
  double seconds = 0.0;
  for (int p = 0; p < pairs; p++) {
    // the next pair: its substitution scores into the reference matrix, the score
    // matrix's inside cleared (both back with the host first)
    llvm_hpvm_request_mem(ref.data(), bytes);
    llvm_hpvm_request_mem(score.data(), bytes);
    random_sequence(a, seed);
    random_sequence(b, seed);
    for (long i = 1; i <= rows; i++)
      for (long j = 1; j <= cols; j++) {
        ref[i * width + j] = substitution(a[i - 1], b[j - 1]);
        score[i * width + j] = UNSET;
      }
    auto start = std::chrono::steady_clock::now();
    for (long diag = 2; diag <= rows + cols; diag++) {
      long firstRow = diag - cols > 1 ? diag - cols : 1;
      long lastRow = diag - 1 < rows ? diag - 1 : rows;
      long cells = lastRow - firstRow + 1;
      long blocks = (cells + BLOCK_SIZE - 1) / BLOCK_SIZE;
      if (blocks > widest) widest = blocks;
      *args = RootIn{score.data(), bytes, ref.data(), bytes, penalty, width, diag, firstRow, cells,
                     BLOCK_SIZE, blocks, RetTy{0}};
      void *nwDFG = __hpvm__launch(0, needleRoot, (void *)args);
      __hpvm__wait(nwDFG);
      if (args->out.bytesScore != bytes) wrongReturns++;
      launches++;
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    llvm_hpvm_request_mem(score.data(), bytes);
    reference_scores(want, ref, rows, width, penalty);
    int bad = 0;
    for (size_t k = 0; k < count; k++)
      if (score[k] != want[k]) bad++;
    wrong += bad;
    std::printf("pair %d: score %d, %d wrong\n", p, score[count - 1], bad);
  }
  llvm_hpvm_untrack_mem(score.data());
  llvm_hpvm_untrack_mem(ref.data());
  std::free(args);
  __hpvm__cleanup();
  std::printf("nw %ldx%ld, penalty %d, %d pairs, %d launches of at most %ld blocks: %d wrong, %d wrong returns\n",
              rows, cols, penalty, pairs, launches, widest, wrong, wrongReturns);
  std::printf("time: %.3f ms\n", seconds * 1e3);
  return wrong != 0 || wrongReturns != 0;
}
