/* <parboil.h> in strict ISO C (-std=c89, c99, c11) and C++, where <time.h> hides POSIX's
   clocks: parameters read, a timer run until it has counted 2 ms of the clock it reads
   (bounded, should that clock stand still), the set printed. Built into a shared library
   by the test (no hpvm: the header alone) and its main called. */
#include <parboil.h>

int main(int argc, char **argv) {
  struct pb_Parameters *p = pb_ReadParameters(&argc, argv);
  struct pb_TimerSet timers;
  long spins = 0;
  if (p == NULL)
    return 1;
  pb_InitializeTimerSet(&timers);
  pb_SwitchToTimer(&timers, pb_TimerID_COMPUTE);
  while (pb_GetElapsedTime(&timers.timers[pb_TimerID_COMPUTE]) < 0.002 && spins < 2000000000L)
    spins++;
  pb_SwitchToTimer(&timers, pb_TimerID_NONE);
  printf("inputs %d, output %s, argc %d, argv[1] %s\n", pb_Parameters_CountInputs(p), p->outFile, argc,
         argv[1]);
  pb_PrintTimerSet(&timers);
  pb_FreeParameters(p);
  return 0;
}
