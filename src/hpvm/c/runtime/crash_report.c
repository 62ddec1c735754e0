/*
 * crash_report.c -- which function a crashing HPVM-C program was in.
 *
 * A C program run by hpvm.c runs in the Python process: a segmentation fault in its host
 * code or in one of its leaves kills that process, and without this the user sees only
 * "Segmentation fault". hpvm builds this file once into a small library of its own
 * (c/crashreport.py) and installs its handler for SIGSEGV, SIGBUS, SIGFPE and SIGILL while
 * a program's main runs. The handler writes one line to stderr -- the signal, the function
 * the faulting instruction is in (dladdr: the program's host library exports its
 * functions) and the program's files -- then hands the signal to the handler that was there
 * before (Python's faulthandler prints the Python side) or to the default action, so the
 * process still dies of the signal, as the C program would.
 *
 * Async-signal-safe: only snprintf into a stack buffer (no allocation for these formats),
 * write, dladdr and sigaction.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static const int SIGNALS[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define NSIGNALS (int)(sizeof SIGNALS / sizeof SIGNALS[0])
static struct sigaction previous[NSIGNALS];
static char program[256];
static int installed;

static const char *signal_name(int sig) {
  switch (sig) {
  case SIGSEGV: return "segmentation fault";
  case SIGBUS: return "bus error";
  case SIGFPE: return "arithmetic exception (integer division by zero?)";
  case SIGILL: return "illegal instruction";
  default: return "fatal signal";
  }
}

static void *fault_pc(void *context) {
#if defined(__x86_64__)
  return (void *)((ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  return (void *)((ucontext_t *)context)->uc_mcontext.pc;
#else
  (void)context;
  return 0;
#endif
}

static void report(int sig, siginfo_t *info, void *context) {
  char line[768];
  void *pc = fault_pc(context);
  Dl_info where;
  int n;
  if (pc && dladdr(pc, &where) && where.dli_sname)
    n = snprintf(line, sizeof line, "hpvm: %s: %s in function %s (at %p, address %p)\n", program,
                 signal_name(sig), where.dli_sname, pc, info ? info->si_addr : 0);
  else
    n = snprintf(line, sizeof line,
                 "hpvm: %s: %s at %p (address %p), in code compiled at run time (a leaf of the "
                 "graph: run it with --target interp to find the instance and line)\n",
                 program, signal_name(sig), pc, info ? info->si_addr : 0);
  if (n > 0)
    (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  for (int k = 0; k < NSIGNALS; k++) {
    if (SIGNALS[k] != sig)
      continue;
    struct sigaction *before = &previous[k];
    if ((before->sa_flags & SA_SIGINFO) && before->sa_sigaction) {
      sigaction(sig, before, 0);
      before->sa_sigaction(sig, info, context); /* Python's faulthandler: it re-raises */
      return;
    }
    if (before->sa_handler != SIG_IGN && before->sa_handler != SIG_DFL && before->sa_handler) {
      sigaction(sig, before, 0);
      before->sa_handler(sig);
      return;
    }
  }
  signal(sig, SIG_DFL); /* returning re-runs the instruction, which now kills the process */
}

/* Install the handler while `name`'s main runs (nested calls keep the first). */
int hpvm_crash_report_install(const char *name) {
  if (installed++)
    return 0;
  snprintf(program, sizeof program, "%s", name ? name : "a C program");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = report;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int k = 0; k < NSIGNALS; k++)
    sigaction(SIGNALS[k], &sa, &previous[k]);
  return 1;
}

/* Put back the handlers that were there before (when the last main returns). */
void hpvm_crash_report_remove(void) {
  if (installed == 0 || --installed)
    return;
  for (int k = 0; k < NSIGNALS; k++)
    sigaction(SIGNALS[k], &previous[k], 0);
}
