// A host written as HPVM's parboil programs are (sgemm's main.cc, stencil's): <parboil.h>'s
// pb_ReadParameters for -i / -o, the timer set switched around reading, tracking, the
// launch and wait, the request and the untracking, printed at the end; the output written
// to -o after. It computes out = a * x + y: x from the first input file, y from the second
// (zeros without one), a from the first argument left after the options (1 without one).
// A file holds a count, then that many numbers. It prints what pb_ReadParameters left, so
// the tests check the parsing too.
#include <hpvm.h>
#include <parboil.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <vector>

struct out_t {
  size_t bytes_out;
};

typedef struct __attribute__((__packed__)) {
  float *x;
  size_t bytes_x;
  float *y;
  size_t bytes_y;
  float *out;
  size_t bytes_out;
  float a;
  struct out_t ret;
} RootIn;

void saxpy_kernel(float *x, size_t bytes_x, float *y, size_t bytes_y, float *out, size_t bytes_out, float a) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(3, x, y, out, 1, out);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  out[i] = a * x[i] + y[i];
  __hpvm__return(1, bytes_out);
}

void saxpyRoot(float *x, size_t bytes_x, float *y, size_t bytes_y, float *out, size_t bytes_out, float a) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, x, y, out, 1, out);
  void *node = __hpvm__createNodeND(1, saxpy_kernel, bytes_out / sizeof(float));
  for (int k = 0; k < 7; k++)
    __hpvm__bindIn(node, k, k, 0);
  __hpvm__bindOut(node, 0, 0, 0);
}

static bool readVector(const char *name, std::vector<float> &v) {
  std::ifstream in(name);
  size_t n = 0;
  if (!(in >> n))
    return false;
  v.resize(n);
  for (size_t i = 0; i < n; i++)
    if (!(in >> v[i]))
      return false;
  return true;
}

int main(int argc, char *argv[]) {
  struct pb_Parameters *params;
  struct pb_TimerSet timers;

  params = pb_ReadParameters(&argc, argv);
  if (params == NULL)
    return -1; // (parboil's message is on stderr)
  printf("argc %d:", argc);
  for (int k = 1; k < argc; k++)
    printf(" [%s]", argv[k]);
  printf("%s\n", argv[argc] == NULL ? "" : " (argv not NULL-terminated)");
  unsigned iter = 0;
  while (params->inpFiles[iter] != NULL) {
    printf("Found input file %d - %s\n", iter, params->inpFiles[iter]);
    iter++;
  }
  printf("output: %s\n", params->outFile ? params->outFile : "(none)");
  if ((params->inpFiles[0] == NULL) || (params->inpFiles[1] != NULL && params->inpFiles[2] != NULL)) {
    fprintf(stderr, "Expecting one or two input filenames\n");
    return -1;
  }
  float a = argc > 1 ? (float)atof(argv[1]) : 1.0f;

  pb_InitializeTimerSet(&timers);
  __hpvm__init();

  pb_SwitchToTimer(&timers, pb_TimerID_IO);
  std::vector<float> x, y;
  if (!readVector(params->inpFiles[0], x) ||
      (params->inpFiles[1] != NULL && (!readVector(params->inpFiles[1], y) || y.size() != x.size()))) {
    std::cerr << "cannot read the input files" << std::endl;
    return 2;
  }
  if (params->inpFiles[1] == NULL)
    y.assign(x.size(), 0.0f);
  std::vector<float> out(x.size(), -1.0f);
  size_t bytes = x.size() * sizeof(float);

  pb_SwitchToTimer(&timers, pb_TimerID_COMPUTE);
  RootIn *args = static_cast<RootIn *>(malloc(sizeof(RootIn)));
  args->x = &x.front();
  args->bytes_x = bytes;
  args->y = &y.front();
  args->bytes_y = bytes;
  args->out = &out.front();
  args->bytes_out = bytes;
  args->a = a;

  pb_SwitchToTimer(&timers, hpvm_TimerID_MEM_TRACK);
  llvm_hpvm_track_mem(&x.front(), bytes);
  llvm_hpvm_track_mem(&y.front(), bytes);
  llvm_hpvm_track_mem(&out.front(), bytes);

  pb_SwitchToTimer(&timers, pb_TimerID_KERNEL);
  void *dfg = __hpvm__launch(0, saxpyRoot, (void *)args);
  __hpvm__wait(dfg);

  pb_SwitchToTimer(&timers, pb_TimerID_COPY);
  llvm_hpvm_request_mem(&out.front(), bytes);

  pb_SwitchToTimer(&timers, hpvm_TimerID_MEM_UNTRACK);
  llvm_hpvm_untrack_mem(&x.front());
  llvm_hpvm_untrack_mem(&y.front());
  llvm_hpvm_untrack_mem(&out.front());
  pb_SwitchToTimer(&timers, pb_TimerID_NONE);

  pb_PrintTimerSet(&timers);
  __hpvm__cleanup();

  if (params->outFile) {
    std::ofstream file(params->outFile);
    file << out.size() << "\n";
    for (float v : out)
      file << v << "\n";
  }
  printf("Kernel time: %.9f\n", pb_GetElapsedTime(&(timers.timers[pb_TimerID_KERNEL])));
  pb_DestroyTimerSet(&timers);
  pb_FreeParameters(params);
  free(args);
  return 0;
}
