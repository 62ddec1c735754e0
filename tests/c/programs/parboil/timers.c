/* A C program including <parboil.h> (as HPVM's C-era parboil hosts, histo's and cutcp's,
   do): the count of -i's files, sub-timers of IO ("Input", "Output") as histo adds them,
   a timer of its own started and stopped around a sleep of argv[1] milliseconds (and the
   misuses Parboil warns about), and a graph squaring -i's integers, written to -o. */
#include <hpvm.h>
#include <parboil.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct out_t {
  size_t bytes_v;
};

typedef struct __attribute__((__packed__)) {
  int *v;
  size_t bytes_v;
  struct out_t out;
} RootIn;

void square(int *v, size_t bytes_v) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, v, 1, v);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  v[i] = v[i] * v[i];
  __hpvm__return(1, bytes_v);
}

void root(int *v, size_t bytes_v) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, v, 1, v);
  void *node = __hpvm__createNodeND(1, square, bytes_v / sizeof(int));
  __hpvm__bindIn(node, 0, 0, 0);
  __hpvm__bindIn(node, 1, 1, 0);
  __hpvm__bindOut(node, 0, 0, 0);
}

int main(int argc, char *argv[]) {
  struct pb_Parameters *parameters = pb_ReadParameters(&argc, argv);
  if (!parameters)
    return -1;
  if (pb_Parameters_CountInputs(parameters) != 1 || !parameters->outFile || argc != 2) {
    fprintf(stderr, "Expecting one input file, -o and the milliseconds to sleep\n");
    return -1;
  }
  struct pb_TimerSet timers;
  pb_InitializeTimerSet(&timers);
  char *inputStr = "Input";
  char *outputStr = "Output";
  pb_AddSubTimer(&timers, inputStr, pb_TimerID_IO);
  pb_AddSubTimer(&timers, outputStr, pb_TimerID_IO);

  pb_SwitchToSubTimer(&timers, inputStr, pb_TimerID_IO);
  FILE *f = fopen(parameters->inpFiles[0], "r");
  int n = 0;
  if (!f || fscanf(f, "%d", &n) != 1 || n <= 0)
    return 2;
  int *v = malloc(n * sizeof(int));
  for (int i = 0; i < n; i++)
    if (fscanf(f, "%d", &v[i]) != 1)
      return 2;
  fclose(f);

  pb_SwitchToTimer(&timers, pb_TimerID_COMPUTE);
  struct pb_Timer own;
  pb_ResetTimer(&own);
  pb_StartTimer(&own);
  pb_StartTimer(&own); /* warned and ignored */
  long ms = atol(argv[1]);
  struct timespec nap = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&nap, NULL);
  double running = pb_GetElapsedTime(&own);
  pb_StopTimer(&own);
  pb_StopTimer(&own); /* warned and ignored */
  printf("slept: %.9f (while running: %.9f)\n", pb_GetElapsedTime(&own), running);

  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  args->v = v;
  args->bytes_v = n * sizeof(int);
  pb_SwitchToTimer(&timers, hpvm_TimerID_MEM_TRACK);
  llvm_hpvm_track_mem(v, n * sizeof(int));
  pb_SwitchToTimer(&timers, pb_TimerID_KERNEL);
  void *dfg = __hpvm__launch(0, root, args);
  __hpvm__wait(dfg);
  pb_SwitchToTimer(&timers, pb_TimerID_COPY);
  llvm_hpvm_request_mem(v, n * sizeof(int));
  pb_SwitchToTimer(&timers, hpvm_TimerID_MEM_UNTRACK);
  llvm_hpvm_untrack_mem(v);
  __hpvm__cleanup();

  pb_SwitchToSubTimer(&timers, outputStr, pb_TimerID_IO);
  f = fopen(parameters->outFile, "w");
  for (int i = 0; i < n; i++)
    fprintf(f, "%d\n", v[i]);
  fclose(f);
  pb_SwitchToSubTimer(&timers, "Missing", pb_TimerID_IO); /* warned: counts IO only */
  pb_SwitchToTimer(&timers, pb_TimerID_NONE);

  pb_PrintTimerSet(&timers);
  pb_DestroyTimerSet(&timers);
  pb_FreeParameters(parameters);
  free(args);
  free(v);
  return 0;
}
