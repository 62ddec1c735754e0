/*
 * parboil.h -- the small host library of the Parboil benchmarks, for hpvm's C front end
 * (python: hpvm.c.compile; command: hpvm c run FILE). Every one of HPVM's parboil programs
 * includes <parboil.h> for its command line (-i FILE[,FILE...], -o FILE) and its timers.
 *
 * Written for this project from what the programs call: the same names, structures, timer
 * categories (Parboil's and the hpvm_TimerID_* ones HPVM's copy adds) and printed format,
 * so those programs compile unchanged; not Parboil's or HPVM's code. Kept to the host
 * calls Parboil's and HPVM's benchmarks make (docs/hpvm-c.md lists what is left out: the
 * OpenCL helpers, asynchronous device timing).
 *
 * Header-only: every function is defined here, static inline. A program's host code is one
 * linked module built into one library (hosttext.py, hostlib.py), and all of a timer set's
 * state lives in the caller's struct pb_TimerSet, so a copy per source file is as good as
 * one library, and nothing about linking changes: no file to add to the command line, no
 * symbol that could clash with one the program defines. Do not compile Parboil's own
 * parboil.c along with it (this header, first on the include path, would clash with it).
 */
#ifndef HPVM_C_PARBOIL_H
#define HPVM_C_PARBOIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HPVM_PB_FN static __inline__ /* (static inline, in every C dialect) */

/* ---- The command line ------------------------------------------------------------ */

/* What pb_ReadParameters read: owned strings, freed by pb_FreeParameters. */
struct pb_Parameters {
  char *outFile;   /* -o FILE, or NULL */
  char **inpFiles; /* -i A,B,...: the files in order, then NULL (just NULL without -i) */
};

/* Read Parboil's options out of main's arguments: -i takes a comma-separated list of input
   files, -o the output file (a repeated option: the last one counts), -- ends the options.
   Every other argument stays in argv, in order, after argv[0]; *argc becomes their count
   (and argv[*argc] NULL). An option Parboil does not know (a '-' and one other character),
   or -i / -o without a file name: a message on stderr, argv left as it was, NULL. */
HPVM_PB_FN struct pb_Parameters *pb_ReadParameters(int *argc, char **argv);
HPVM_PB_FN void pb_FreeParameters(struct pb_Parameters *p);
HPVM_PB_FN int pb_Parameters_CountInputs(struct pb_Parameters *p);

/* ---- Timers ---------------------------------------------------------------------- */

typedef unsigned long long pb_Timestamp; /* nanoseconds of CLOCK_MONOTONIC */

enum pb_TimerState { pb_Timer_STOPPED, pb_Timer_RUNNING };

struct pb_Timer {
  enum pb_TimerState state;
  pb_Timestamp elapsed; /* time counted so far (not counting a running interval) */
  pb_Timestamp init;    /* when the running interval began */
};

/* Reset: stopped, nothing counted. Start / stop: count the time in between (starting a
   running timer, or stopping a stopped one, is ignored with a message on stderr, as in
   Parboil). pb_GetElapsedTime: the seconds counted, a running interval included. */
HPVM_PB_FN void pb_ResetTimer(struct pb_Timer *timer);
HPVM_PB_FN void pb_StartTimer(struct pb_Timer *timer);
HPVM_PB_FN void pb_StopTimer(struct pb_Timer *timer);
HPVM_PB_FN double pb_GetElapsedTime(struct pb_Timer *timer);

/* The categories a program's time is counted in: Parboil's, then HPVM's. */
enum pb_TimerID {
  pb_TimerID_NONE = 0, /* counted nowhere */
  pb_TimerID_IO,
  pb_TimerID_KERNEL,
  pb_TimerID_COPY,
  pb_TimerID_DRIVER,
  pb_TimerID_COPY_ASYNC,
  pb_TimerID_COMPUTE,
  pb_TimerID_OVERLAP, /* Parboil's asynchronous double counting: never counted here */
  hpvm_TimerID_INIT_CTX,
  hpvm_TimerID_CLEAR_CTX,
  hpvm_TimerID_COPY_SCALAR,
  hpvm_TimerID_COPY_PTR,
  hpvm_TimerID_MEM_FREE,
  hpvm_TimerID_READ_OUTPUT,
  hpvm_TimerID_SETUP,
  hpvm_TimerID_MEM_TRACK,
  hpvm_TimerID_MEM_UNTRACK,
  hpvm_TimerID_MISC,
  hpvm_TimerID_PTHREAD_CREATE,
  hpvm_TimerID_ARG_PACK,
  hpvm_TimerID_ARG_UNPACK,
  hpvm_TimerID_COMPUTATION,
  hpvm_TimerID_OUTPUT_PACK,
  hpvm_TimerID_OUTPUT_UNPACK,
  pb_TimerID_LAST /* the number of categories */
};

/* A named part of one category (pb_AddSubTimer), counted while it and its category run. */
struct pb_SubTimer {
  char *label;
  struct pb_Timer timer;
  struct pb_SubTimer *next;
};

struct pb_SubTimerList {
  struct pb_SubTimer *current; /* the one running, or NULL */
  struct pb_SubTimer *subtimer_list;
};

/* One timer per category (programs read timers[pb_TimerID_KERNEL] directly), at most one
   of them running: the current category's. */
struct pb_TimerSet {
  enum pb_TimerID current;
  pb_Timestamp wall_begin; /* when pb_InitializeTimerSet ran */
  struct pb_Timer timers[pb_TimerID_LAST];
  struct pb_SubTimerList *sub_timer_list[pb_TimerID_LAST];
};

/* Every timer reset and stopped, no sub-timers, the wall clock started. */
HPVM_PB_FN void pb_InitializeTimerSet(struct pb_TimerSet *timers);
/* Count the time from now on in `timer` (stopping the current category and its sub-timer);
   pb_TimerID_NONE counts it nowhere. */
HPVM_PB_FN void pb_SwitchToTimer(struct pb_TimerSet *timers, enum pb_TimerID timer);
/* Add the sub-timer `label` (copied) to `category`. */
HPVM_PB_FN void pb_AddSubTimer(struct pb_TimerSet *timers, const char *label, enum pb_TimerID category);
/* As pb_SwitchToTimer(category), counting the time in its sub-timer `label` too (NULL: in
   none; a label never added: in none, with a message on stderr). */
HPVM_PB_FN void pb_SwitchToSubTimer(struct pb_TimerSet *timers, const char *label,
                                    enum pb_TimerID category);
/* Print, on stdout, one line per category that has counted time ("Compute             :
   0.012345678", seconds), its sub-timers under it (" -Input ...: seconds"), then
   "Timer Wall Time: seconds" since pb_InitializeTimerSet. */
HPVM_PB_FN void pb_PrintTimerSet(struct pb_TimerSet *timers);
/* Free the sub-timers (the set itself is the caller's). */
HPVM_PB_FN void pb_DestroyTimerSet(struct pb_TimerSet *timers);

/* ---- Definitions ----------------------------------------------------------------- */

HPVM_PB_FN char *__hpvm_pb_copy(const char *text, size_t length) {
  char *copy = (char *)malloc(length + 1);
  memcpy(copy, text, length);
  copy[length] = 0;
  return copy;
}

HPVM_PB_FN void __hpvm_pb_free_list(char **list) {
  char **p;
  if (list == NULL)
    return;
  for (p = list; *p != NULL; p++)
    free(*p);
  free(list);
}

/* "a,b,c" -> {"a", "b", "c", NULL} (an empty item stays an empty string, as in Parboil). */
HPVM_PB_FN char **__hpvm_pb_split(const char *list) {
  size_t count = 1, k = 0;
  const char *p, *start = list;
  char **items;
  for (p = list; *p != 0; p++)
    count += *p == ',';
  items = (char **)malloc((count + 1) * sizeof(char *));
  for (p = list;; p++) {
    if (*p == ',' || *p == 0) {
      items[k++] = __hpvm_pb_copy(start, (size_t)(p - start));
      start = p + 1;
      if (*p == 0)
        break;
    }
  }
  items[k] = NULL;
  return items;
}

HPVM_PB_FN struct pb_Parameters *pb_ReadParameters(int *argc, char **argv) {
  int n = *argc, k = 1, kept = 1;
  char **rest;
  struct pb_Parameters *p = (struct pb_Parameters *)malloc(sizeof(struct pb_Parameters));
  p->outFile = NULL;
  p->inpFiles = (char **)calloc(1, sizeof(char *));
  if (n < 1)
    return p;
  rest = (char **)malloc((size_t)(n + 1) * sizeof(char *)); /* argv changes only on success */
  rest[0] = argv[0];
  while (k < n) {
    char *arg = argv[k];
    if (arg[0] != '-' || arg[1] == 0 || arg[2] != 0) { /* not an option: kept */
      rest[kept++] = argv[k++];
      continue;
    }
    if (arg[1] == '-') { /* "--": the rest kept as it is */
      k++;
      break;
    }
    if (arg[1] != 'i' && arg[1] != 'o') {
      fprintf(stderr,
              "parboil: unexpected command-line parameter '%s' (the options are -i FILE[,FILE...], "
              "-o FILE and --)\n",
              arg);
      goto error;
    }
    if (k + 1 >= n) {
      fprintf(stderr, "parboil: expecting a file name after '%s'\n", arg);
      goto error;
    }
    if (arg[1] == 'o') {
      free(p->outFile);
      p->outFile = __hpvm_pb_copy(argv[k + 1], strlen(argv[k + 1]));
    } else {
      __hpvm_pb_free_list(p->inpFiles);
      p->inpFiles = __hpvm_pb_split(argv[k + 1]);
    }
    k += 2;
  }
  while (k < n)
    rest[kept++] = argv[k++];
  rest[kept] = NULL;
  memcpy(argv, rest, (size_t)(kept + 1) * sizeof(char *));
  free(rest);
  *argc = kept;
  return p;
error:
  free(rest);
  pb_FreeParameters(p);
  return NULL;
}

HPVM_PB_FN void pb_FreeParameters(struct pb_Parameters *p) {
  if (p == NULL)
    return;
  free(p->outFile);
  __hpvm_pb_free_list(p->inpFiles);
  free(p);
}

HPVM_PB_FN int pb_Parameters_CountInputs(struct pb_Parameters *p) {
  int n = 0;
  while (p->inpFiles[n] != NULL)
    n++;
  return n;
}

/* The time now: POSIX's monotonic clock. Strict ISO C (-std=c99, -std=c11) hides POSIX's
   clocks in <time.h>: C11's timespec_get (the real-time clock) then, and under C99, which
   has neither, clock_gettime declared here as Linux defines it (clockid_t an int,
   CLOCK_MONOTONIC 1, struct timespec two longs). */
#if defined(CLOCK_MONOTONIC)
HPVM_PB_FN pb_Timestamp __hpvm_pb_now(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (pb_Timestamp)now.tv_sec * 1000000000ULL + (pb_Timestamp)now.tv_nsec;
}
#elif defined(TIME_UTC)
HPVM_PB_FN pb_Timestamp __hpvm_pb_now(void) {
  struct timespec now;
  timespec_get(&now, TIME_UTC);
  return (pb_Timestamp)now.tv_sec * 1000000000ULL + (pb_Timestamp)now.tv_nsec;
}
#else
struct __hpvm_pb_timespec {
  long tv_sec;
  long tv_nsec;
};
extern int clock_gettime(int, struct __hpvm_pb_timespec *);
HPVM_PB_FN pb_Timestamp __hpvm_pb_now(void) {
  struct __hpvm_pb_timespec now;
  clock_gettime(1, &now);
  return (pb_Timestamp)now.tv_sec * 1000000000ULL + (pb_Timestamp)now.tv_nsec;
}
#endif

/* Start / stop at `now` (one clock reading for every timer a switch starts and stops, so no
   time falls between two of them); silent: the switches start and stop only what they must. */
HPVM_PB_FN void __hpvm_pb_start_at(struct pb_Timer *timer, pb_Timestamp now) {
  timer->state = pb_Timer_RUNNING;
  timer->init = now;
}

HPVM_PB_FN void __hpvm_pb_stop_at(struct pb_Timer *timer, pb_Timestamp now) {
  if (timer->state != pb_Timer_RUNNING)
    return;
  timer->elapsed += now - timer->init;
  timer->init = now;
  timer->state = pb_Timer_STOPPED;
}

HPVM_PB_FN void pb_ResetTimer(struct pb_Timer *timer) {
  timer->state = pb_Timer_STOPPED;
  timer->elapsed = 0;
  timer->init = 0;
}

HPVM_PB_FN void pb_StartTimer(struct pb_Timer *timer) {
  if (timer->state == pb_Timer_RUNNING) {
    fputs("parboil: ignoring an attempt to start a running timer\n", stderr);
    return;
  }
  __hpvm_pb_start_at(timer, __hpvm_pb_now());
}

HPVM_PB_FN void pb_StopTimer(struct pb_Timer *timer) {
  if (timer->state != pb_Timer_RUNNING) {
    fputs("parboil: ignoring an attempt to stop a stopped timer\n", stderr);
    return;
  }
  __hpvm_pb_stop_at(timer, __hpvm_pb_now());
}

/* The seconds `timer` has counted by `now`. */
HPVM_PB_FN double __hpvm_pb_seconds_at(const struct pb_Timer *timer, pb_Timestamp now) {
  pb_Timestamp counted = timer->elapsed;
  if (timer->state == pb_Timer_RUNNING)
    counted += now - timer->init;
  return (double)counted / 1e9;
}

HPVM_PB_FN double pb_GetElapsedTime(struct pb_Timer *timer) {
  return __hpvm_pb_seconds_at(timer, __hpvm_pb_now());
}

HPVM_PB_FN void pb_InitializeTimerSet(struct pb_TimerSet *timers) {
  int n;
  timers->current = pb_TimerID_NONE;
  for (n = 0; n < pb_TimerID_LAST; n++) {
    pb_ResetTimer(&timers->timers[n]);
    timers->sub_timer_list[n] = NULL;
  }
  timers->wall_begin = __hpvm_pb_now();
}

HPVM_PB_FN int __hpvm_pb_valid(enum pb_TimerID id, const char *api) {
  if ((int)id >= 0 && (int)id < (int)pb_TimerID_LAST)
    return 1;
  fprintf(stderr, "parboil: %s: no timer category %d (pb_TimerID_NONE to pb_TimerID_LAST - 1)\n", api,
          (int)id);
  return 0;
}

/* Stop the current category's timer and its sub-timer at `now`. */
HPVM_PB_FN void __hpvm_pb_stop_current(struct pb_TimerSet *timers, pb_Timestamp now) {
  struct pb_SubTimerList *subs = timers->sub_timer_list[timers->current];
  if (timers->current != pb_TimerID_NONE)
    __hpvm_pb_stop_at(&timers->timers[timers->current], now);
  if (subs != NULL && subs->current != NULL) {
    __hpvm_pb_stop_at(&subs->current->timer, now);
    subs->current = NULL;
  }
}

HPVM_PB_FN void pb_SwitchToTimer(struct pb_TimerSet *timers, enum pb_TimerID timer) {
  pb_Timestamp now;
  if (!__hpvm_pb_valid(timer, "pb_SwitchToTimer"))
    return;
  now = __hpvm_pb_now();
  __hpvm_pb_stop_current(timers, now);
  timers->current = timer;
  if (timer != pb_TimerID_NONE)
    __hpvm_pb_start_at(&timers->timers[timer], now);
}

HPVM_PB_FN void pb_AddSubTimer(struct pb_TimerSet *timers, const char *label, enum pb_TimerID category) {
  struct pb_SubTimer *sub, **end;
  struct pb_SubTimerList *subs;
  if (!__hpvm_pb_valid(category, "pb_AddSubTimer"))
    return;
  sub = (struct pb_SubTimer *)malloc(sizeof(struct pb_SubTimer));
  sub->label = __hpvm_pb_copy(label, strlen(label));
  pb_ResetTimer(&sub->timer);
  sub->next = NULL;
  subs = timers->sub_timer_list[category];
  if (subs == NULL) {
    subs = (struct pb_SubTimerList *)malloc(sizeof(struct pb_SubTimerList));
    subs->current = NULL;
    subs->subtimer_list = NULL;
    timers->sub_timer_list[category] = subs;
  }
  for (end = &subs->subtimer_list; *end != NULL; end = &(*end)->next)
    ;
  *end = sub;
}

HPVM_PB_FN void pb_SwitchToSubTimer(struct pb_TimerSet *timers, const char *label,
                                    enum pb_TimerID category) {
  struct pb_SubTimerList *subs;
  struct pb_SubTimer *sub = NULL;
  pb_Timestamp now;
  if (!__hpvm_pb_valid(category, "pb_SwitchToSubTimer"))
    return;
  subs = timers->sub_timer_list[category];
  if (label != NULL) {
    for (sub = subs != NULL ? subs->subtimer_list : NULL; sub != NULL; sub = sub->next)
      if (strcmp(sub->label, label) == 0)
        break;
    if (sub == NULL)
      fprintf(stderr,
              "parboil: pb_SwitchToSubTimer: no sub-timer \"%s\" in category %d (add it with "
              "pb_AddSubTimer); counting the category only\n",
              label, (int)category);
  }
  now = __hpvm_pb_now();
  __hpvm_pb_stop_current(timers, now);
  timers->current = category;
  if (category == pb_TimerID_NONE)
    return;
  __hpvm_pb_start_at(&timers->timers[category], now);
  if (sub != NULL) {
    subs->current = sub;
    __hpvm_pb_start_at(&sub->timer, now);
  }
}

/* The name a category is printed with (HPVM's spelling). */
HPVM_PB_FN const char *__hpvm_pb_name(int id) {
  static const char *const names[pb_TimerID_LAST] = {
      "None",        "IO",          "Kernel",   "Copy",           "Driver",     "Copy Async",
      "Compute",     "Overlap",     "Init_Ctx", "Clear_Ctx",      "Copy_Scalar", "Copy_Ptr",
      "Mem_Free",    "Read_Output", "Setup",    "Mem_Track",      "Mem_Untrack", "Misc",
      "Pthread_Create", "Arg_Pack", "Arg_Unpack", "Computation",  "Output_Pack", "Output_Unpack"};
  return names[id];
}

HPVM_PB_FN void pb_PrintTimerSet(struct pb_TimerSet *timers) {
  /* every time read at one instant, so that no category (running or not) exceeds the wall time */
  const int width = 20;
  pb_Timestamp wall_end = __hpvm_pb_now();
  int id;
  for (id = pb_TimerID_NONE + 1; id < pb_TimerID_LAST; id++) {
    struct pb_SubTimerList *subs = timers->sub_timer_list[id];
    struct pb_SubTimer *sub;
    double seconds = __hpvm_pb_seconds_at(&timers->timers[id], wall_end);
    int sub_width = width;
    if (id == pb_TimerID_OVERLAP || seconds == 0)
      continue;
    printf("%-*s: %.9f\n", width, __hpvm_pb_name(id), seconds);
    for (sub = subs != NULL ? subs->subtimer_list : NULL; sub != NULL; sub = sub->next)
      if ((int)strlen(sub->label) > sub_width)
        sub_width = (int)strlen(sub->label);
    for (sub = subs != NULL ? subs->subtimer_list : NULL; sub != NULL; sub = sub->next)
      printf(" -%-*s: %.9f\n", sub_width, sub->label, __hpvm_pb_seconds_at(&sub->timer, wall_end));
  }
  printf("Timer Wall Time: %.9f\n", (double)(wall_end - timers->wall_begin) / 1e9);
}

HPVM_PB_FN void pb_DestroyTimerSet(struct pb_TimerSet *timers) {
  int id;
  for (id = 0; id < pb_TimerID_LAST; id++) {
    struct pb_SubTimerList *subs = timers->sub_timer_list[id];
    struct pb_SubTimer *sub, *next;
    if (subs == NULL)
      continue;
    for (sub = subs->subtimer_list; sub != NULL; sub = next) {
      next = sub->next;
      free(sub->label);
      free(sub);
    }
    free(subs);
    timers->sub_timer_list[id] = NULL;
  }
}

#undef HPVM_PB_FN

#ifdef __cplusplus
}
#endif

#endif /* HPVM_C_PARBOIL_H */
