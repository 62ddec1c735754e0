/* hpvm.runtime._replay — a launch plan's replay (runtime/plan.py, ``LaunchPlan.replay``) in C.

Why: a replayed launch of a stencil step comes right after a step that streamed megabytes
through the core, so every frame and object of the host path is a cache miss there. The
plan's generated Python replay cost 3.9-5.6 us over the compiled step where the step is
85 us (docs/backends/cpu-performance.md, "The replay in C"); this one makes the same
tests in fewer instructions and objects.

What it does is exactly what the generated Python replay does: the ports' acceptance
tests (``launch.port_test`` describes them, as it does for ``launch.accept_test``), the
replay key, the record's look-up in the tracker, a token per entry
(``MemoryTracker.hold_replay``'s protocol: append, then the epoch check), the quick and
current tests, the handle, the thread count (all where the key's runs are ``plain``, else
what ``Runs.threads`` picks), the timed run — a compiled entry called directly where the
back end gave one for the thread count (its entry for all threads, its ``single`` for one),
else the runner with its thread count —
``Runs.add`` (its short path here, the method otherwise), the tokens let go. A record of
another class than ``plan.Replay`` is handed to the Python replay (``fallback``) before
anything is held or run. An error of the entry is worded by ``failed_run``
(runtime/fastpath.py) and kept on the handle, a runner's as it is; Ctrl-C is raised by the
launch itself, as in Python.

The records it reads (``plan.Replay``, ``quick.Runs``) and the handle it makes
(``LaunchHandle``) are Python classes with ``__slots__``: their slots are read and written
at the offsets Python itself uses (``layout`` resolves them once from the classes' member
descriptors, and refuses classes whose attributes are not such slots), where an attribute
look-up per field was a third of this function's time. The handle gets what
``LaunchHandle.__init__`` gives it (a test compares the two field by field).

One thing only it does, beyond the Python replay: a record replayed ``hot_replays`` times (``plan.HOT_REPLAYS``) is
handed to ``hot`` (runtime/fastpath.py), which asks the back end for its direct calls as
``NativeCall``s (backends/base.py): C functions of a block of 64-bit slots, which
``call_native`` fills from the arguments and calls past Numba's dispatcher — the Python
replay cannot call them, and calls the same code through the dispatcher.

No NumPy C API table is used (no ``import_array``): only the array object's fields,
through NumPy's inline accessors, and the ndarray type passed in from Python. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <time.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NO_IMPORT_ARRAY
#include <numpy/ndarraytypes.h>
#include <numpy/arrayscalars.h>

enum { PORT_ARRAY, PORT_POINTER, PORT_TYPES, PORT_INT, PORT_NEVER };

typedef struct {
    int kind;
    int written;     /* PORT_ARRAY: the writeable flag is tested */
    PyObject *dtype; /* PORT_ARRAY, PORT_POINTER */
    PyObject *types; /* PORT_TYPES, PORT_INT: the accepted types (a frozenset) */
    PyObject *lo, *hi; /* PORT_INT: the range of the port's integer type */
    int keyed;         /* PORT_TYPES, PORT_INT: the value is in the replay key (else its type only) */
} Port;

/* A record found for a key, kept to be found again without the key (``cached``). */
typedef struct {
    PyObject *key;     /* the replay key it was kept under (holds no array: ids, shapes, scalars) */
    PyObject *record;  /* a weak reference to it */
    PyObject *tracker; /* a weak reference to the tracker whose table held it */
    long long version; /* the table's ``replays_version`` then */
} Found;

#define FOUND 2 /* (a stencil swapping two arrays replays two keys in turn) */

typedef struct {
    PyObject_HEAD
    PyObject *plan, *fallback, *failed_run, *finished, *ndarray;
    PyObject *hot;    /* ``fastpath.hot(record, args)``: a record replayed ``hot_replays`` times */
    long hot_replays;
    PyObject *limits; /* quick.py's globals: ``QUICK_RUN_S`` read per run (tests change it) */
    Py_ssize_t count;
    Port *ports;
    Found found[FOUND];
    int next; /* the slot of ``found`` the next record takes */
} Spec;

static PyObject *s_tracker, *s_device_entries, *s_versioned, *s_replays, *s_replay_epoch, *s_runners_version,
    *s_generation, *s_add, *s_threads, *s_shape, *s_quick_run_s, *s_replays_version, *s_probes_limit,
    *s_recheck_every, *s_recheck_runs, *s_recheck_far_every, *s_one_thread_far;

/* The classes whose slots are read and written in place (``layout``), and the offsets. */
static PyTypeObject *replay_type, *runs_type, *handle_type;
static struct {
    Py_ssize_t holds, runs, version, backend, entry, single, native, native_single, results, hits, runner, tail, root,
        arrays, known, epoch;
} REPLAY;
static struct {
    Py_ssize_t fast, plain, every, one, last, before, probes, choices, other;
} RUNS;
static struct {
    Py_ssize_t runtime, root, backend, outputs, error, done, arrays, generation, quick;
} HANDLE;

/* An object's slot at ``offset``: borrowed, NULL where unset. */
static inline PyObject *slot(PyObject *owner, Py_ssize_t offset) { return *(PyObject **)((char *)owner + offset); }

/* A slot set to a new reference to ``value``, as ``owner.name = value`` does. */
static inline void set_slot(PyObject *owner, Py_ssize_t offset, PyObject *value) {
    PyObject **place = (PyObject **)((char *)owner + offset);
    PyObject *old = *place;
    Py_INCREF(value);
    *place = value;
    Py_XDECREF(old);
}

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t); /* (time.perf_counter's clock on Linux) */
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Whether ``value`` passes ``port``'s test: 1, 0, or -1 with an exception set. */
static int accepts(const Spec *spec, const Port *port, PyObject *value) {
    switch (port->kind) {
    case PORT_ARRAY:
    case PORT_POINTER: {
        if ((PyObject *)Py_TYPE(value) != spec->ndarray) return 0;
        PyArrayObject *array = (PyArrayObject *)value;
        PyObject *dtype = (PyObject *)PyArray_DESCR(array);
        if (dtype != port->dtype) {
            int same = PyObject_RichCompareBool(dtype, port->dtype, Py_EQ);
            if (same != 1) return same;
        }
        if (port->kind == PORT_POINTER)
            return PyArray_NDIM(array) == 1 && (PyArray_FLAGS(array) & NPY_ARRAY_C_CONTIGUOUS) != 0;
        return !port->written || (PyArray_FLAGS(array) & NPY_ARRAY_WRITEABLE) != 0;
    }
    case PORT_TYPES:
        return PySet_Contains(port->types, (PyObject *)Py_TYPE(value));
    case PORT_INT: {
        int known = PySet_Contains(port->types, (PyObject *)Py_TYPE(value));
        if (known != 1) return known;
        PyObject *number = PyNumber_Long(value);
        if (number == NULL) return -1;
        int within = PyObject_RichCompareBool(port->lo, number, Py_LE);
        if (within == 1) within = PyObject_RichCompareBool(number, port->hi, Py_LE);
        Py_DECREF(number);
        return within;
    }
    default:
        return 0;
    }
}

/* The replay key ``LaunchPlan.ident`` makes: the plan, each array's id and shape, each
   scalar's type and value — ``None`` for the value of a scalar that changes no work
   (``keyed`` 0: ``LaunchPlan.neutral``). */
static PyObject *replay_key(const Spec *spec, PyObject *const *values) {
    PyObject *key = PyTuple_New(1 + 2 * spec->count);
    if (key == NULL) return NULL;
    Py_INCREF(spec->plan);
    PyTuple_SET_ITEM(key, 0, spec->plan);
    for (Py_ssize_t i = 0; i < spec->count; i++) {
        PyObject *value = values[i], *first, *second;
        int kind = spec->ports[i].kind;
        if (kind == PORT_ARRAY || kind == PORT_POINTER) {
            first = PyLong_FromVoidPtr(value);
            second = PyObject_GetAttr(value, s_shape);
        } else {
            first = (PyObject *)Py_TYPE(value);
            Py_INCREF(first);
            second = spec->ports[i].keyed ? value : Py_None;
            Py_INCREF(second);
        }
        if (first != NULL) PyTuple_SET_ITEM(key, 1 + 2 * i, first);
        if (second != NULL) PyTuple_SET_ITEM(key, 2 + 2 * i, second);
        if (first == NULL || second == NULL) {
            Py_DECREF(key);
            return NULL;
        }
    }
    return key;
}

/* Whether ``values`` make ``key`` (``replay_key``) — compared, not made: an array's id is
   the object's (the key's record holds its arrays while it lives), its shape its
   dimensions, a scalar's type the same and its value equal (where ``keyed``). 1, 0, or -1
   with an exception set. */
static int makes(const Spec *spec, PyObject *key, PyObject *const *values) {
    for (Py_ssize_t i = 0; i < spec->count; i++) {
        PyObject *value = values[i], *first = PyTuple_GET_ITEM(key, 1 + 2 * i), *second = PyTuple_GET_ITEM(key, 2 + 2 * i);
        int kind = spec->ports[i].kind;
        if (kind == PORT_ARRAY || kind == PORT_POINTER) {
            if (PyLong_AsVoidPtr(first) != (void *)value) return PyErr_Occurred() ? -1 : 0;
            PyArrayObject *array = (PyArrayObject *)value;
            if (!PyTuple_CheckExact(second) || PyTuple_GET_SIZE(second) != PyArray_NDIM(array)) return 0;
            for (int d = 0; d < PyArray_NDIM(array); d++) {
                Py_ssize_t extent = PyLong_AsSsize_t(PyTuple_GET_ITEM(second, d));
                if (extent != (Py_ssize_t)PyArray_DIMS(array)[d]) return extent == -1 && PyErr_Occurred() ? -1 : 0;
            }
        } else {
            if (first != (PyObject *)Py_TYPE(value)) return 0;
            if (spec->ports[i].keyed && second != value) {
                int equal = PyObject_RichCompareBool(second, value, Py_EQ);
                if (equal != 1) return equal;
            }
        }
    }
    return 1;
}

/* What a weak reference refers to: a new reference, or NULL where it is gone.
   (``PyWeakref_GetRef`` from Python 3.13, where ``PyWeakref_GET_OBJECT`` is deprecated.) */
static PyObject *referent(PyObject *reference) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *object = NULL;
    if (PyWeakref_GetRef(reference, &object) < 0) PyErr_Clear();
    return object;
#else
    PyObject *object = PyWeakref_GET_OBJECT(reference);
    return object == Py_None ? NULL : Py_NewRef(object);
#endif
}

/* Whether a weak reference refers to ``object``. */
static int refers_to(PyObject *reference, PyObject *object) {
    PyObject *found = referent(reference);
    Py_XDECREF(found);
    return found == object;
}

/* The record the tracker's table holds under the key ``values`` make, if one found before
   (``remember``) is still there — the same tracker, its table unchanged since
   (``replays_version``), the record alive — and ``values`` make its key: a new reference;
   else NULL (with an exception set on an error). Saves making the key and looking it up:
   a tuple of the ids, shapes and scalars, hashed and compared item by item, after a step
   that evicted them from the caches. */
static PyObject *cached(Spec *spec, PyObject *tracker, long long version, PyObject *const *values) {
    for (int k = 0; k < FOUND; k++) {
        Found *found = &spec->found[k];
        if (found->key == NULL || found->version != version || !refers_to(found->tracker, tracker)) continue;
        PyObject *record = referent(found->record);
        if (record == NULL) continue;
        PyObject *key = Py_NewRef(found->key); /* (held: another thread may take the slot) */
        int made = makes(spec, key, values);
        Py_DECREF(key);
        if (made == 1) return record;
        Py_DECREF(record);
        if (made < 0) return NULL;
    }
    return NULL;
}

static void forget_found(Found *found) {
    Py_CLEAR(found->key);
    Py_CLEAR(found->record);
    Py_CLEAR(found->tracker);
}

/* ``record``, found in ``tracker``'s table under ``key`` at ``version``, kept for
   ``cached`` (in the oldest slot). A record that cannot be referred to weakly is not kept. */
static void remember(Spec *spec, PyObject *tracker, long long version, PyObject *key, PyObject *record) {
    PyObject *to_record = PyWeakref_NewRef(record, NULL), *to_tracker = PyWeakref_NewRef(tracker, NULL);
    if (to_record == NULL || to_tracker == NULL) {
        Py_XDECREF(to_record);
        Py_XDECREF(to_tracker);
        PyErr_Clear();
        return;
    }
    Found *found = &spec->found[spec->next];
    spec->next = (spec->next + 1) % FOUND;
    forget_found(found);
    found->key = Py_NewRef(key);
    found->record = to_record;
    found->tracker = to_tracker;
    found->version = version;
}

/* The tracker's ``replays_version`` (changed whenever its table of records is), or -1
   where it has none (nothing is then ``cached``). */
static long long table_version(PyObject *tracker) {
    PyObject *version = PyObject_GetAttr(tracker, s_replays_version);
    long long result = version != NULL && PyLong_CheckExact(version) ? PyLong_AsLongLong(version) : -1;
    Py_XDECREF(version);
    PyErr_Clear();
    return result;
}

/* The tokens of a held record let go (``MemoryTracker.release_replay``): the last of
   each entry's list. */
static void release(PyObject *holds) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(holds); i++) {
        PyObject *tokens = PyTuple_GET_ITEM(holds, i);
        Py_ssize_t size = PyList_GET_SIZE(tokens);
        if (size > 0) PyList_SetSlice(tokens, size - 1, size, NULL);
    }
}

/* A token appended to each entry's list (``MemoryTracker.hold_replay``). -1 on an error
   (those appended are let go). */
static int hold(PyObject *holds) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(holds); i++) {
        if (PyList_Append(PyTuple_GET_ITEM(holds, i), Py_None) < 0) {
            for (Py_ssize_t j = 0; j < i; j++) {
                PyObject *tokens = PyTuple_GET_ITEM(holds, j);
                Py_ssize_t size = PyList_GET_SIZE(tokens);
                PyList_SetSlice(tokens, size - 1, size, NULL);
            }
            return -1;
        }
    }
    return 0;
}

/* An attribute's truth: 1, 0, or -1 with an exception set. */
static int truth(PyObject *owner, PyObject *name) {
    PyObject *value = PyObject_GetAttr(owner, name);
    if (value == NULL) return -1;
    int result = PyObject_IsTrue(value);
    Py_DECREF(value);
    return result;
}

/* Whether ``value`` (a slot's, borrowed, maybe unset) differs from ``owner.name``: 1, 0, or
   -1 with an exception set. */
static int differs(PyObject *value, PyObject *owner, PyObject *name) {
    PyObject *other = PyObject_GetAttr(owner, name);
    if (other == NULL) return -1;
    int result = value == NULL ? 1 : value == other ? 0 : PyObject_RichCompareBool(value, other, Py_NE);
    Py_DECREF(other);
    return result;
}

/* Whether ``threads`` (what ``Runs.threads`` picked) is one thread. */
static int one_thread(PyObject *threads) {
    int overflow = 0;
    return PyLong_CheckExact(threads) && PyLong_AsLongAndOverflow(threads, &overflow) == 1 && !overflow;
}

/* quick.py's global ``name`` as a C long (``*value``): 1 where it is an int that fits, 0
   where it is not (the caller calls the method instead), -1 with an exception set. */
static int limit_of(PyObject *limits, PyObject *name, long *value) {
    PyObject *limit = PyDict_GetItemWithError(limits, name);
    if (limit == NULL) return PyErr_Occurred() ? -1 : 0;
    int overflow = 0;
    *value = PyLong_CheckExact(limit) ? PyLong_AsLongAndOverflow(limit, &overflow) : 0;
    return PyLong_CheckExact(limit) && !overflow && *value > 0;
}

/* A slot of ``owner`` (a ``Runs``, a ``Replay``) holding a small int (``*value``): 1, else 0
   (unset, or not one). */
static int count_of(PyObject *owner, Py_ssize_t offset, long *value) {
    PyObject *count = slot(owner, offset);
    int overflow = 0;
    *value = count != NULL && PyLong_CheckExact(count) ? PyLong_AsLongAndOverflow(count, &overflow) : 0;
    return count != NULL && PyLong_CheckExact(count) && !overflow;
}

/* Whether ``runs``' probes on one thread are done (``ONE_THREAD_PROBES`` of them): 1, 0,
   2 where the slots or the limit are not what ``Runs`` keeps (the method decides), -1 with
   an exception set. */
static int probed(PyObject *limits, PyObject *runs) {
    long probes, limit;
    int known = limit_of(limits, s_probes_limit, &limit);
    if (known <= 0) return known < 0 ? -1 : 2;
    if (!count_of(runs, RUNS.probes, &probes)) return 2;
    return probes >= limit;
}

/* ``Runs.threads()`` of a key whose runs are not ``plain``: the same choice, made here where
   the probes are done and the slots hold what ``Runs`` keeps (else the method): None (all
   threads) or 1, counting the choice. NULL with an exception set. */
static PyObject *pick_threads(PyObject *limits, PyObject *runs) {
    PyObject *one = slot(runs, RUNS.one), *every = slot(runs, RUNS.every), *other = slot(runs, RUNS.other);
    long choices, every_nth, pair, far_nth;
    int done = probed(limits, runs), known = limit_of(limits, s_recheck_every, &every_nth);
    if (done < 0 || known < 0 || (known = known ? limit_of(limits, s_recheck_runs, &pair) : 0) < 0) return NULL;
    if (known && (known = limit_of(limits, s_recheck_far_every, &far_nth)) < 0) return NULL;
    PyObject *far = known ? PyDict_GetItemWithError(limits, s_one_thread_far) : NULL;
    if (far == NULL && PyErr_Occurred()) return NULL;
    if (done != 1 || !known || far == NULL || !PyFloat_CheckExact(far) || !count_of(runs, RUNS.choices, &choices) ||
        choices == LONG_MAX || one == NULL || !PyFloat_CheckExact(one) || every == NULL || !PyFloat_CheckExact(every) ||
        (other != Py_True && other != Py_False))
        return PyObject_CallMethodNoArgs(runs, s_threads);
    PyObject *counted = PyLong_FromLong(++choices);
    if (counted == NULL) return NULL;
    set_slot(runs, RUNS.choices, counted);
    Py_DECREF(counted);
    int faster = PyFloat_AS_DOUBLE(one) < PyFloat_AS_DOUBLE(every); /* (one thread's fastest run) */
    long period = PyFloat_AS_DOUBLE(one) * PyFloat_AS_DOUBLE(far) <= PyFloat_AS_DOUBLE(every) ? far_nth : every_nth;
    long turn = choices % period;
    if (turn == 0) set_slot(runs, RUNS.other, faster ? Py_False : Py_True); /* (the count not chosen now) */
    if (turn < pair && choices >= period) faster = slot(runs, RUNS.other) == Py_True;
    return faster ? PyLong_FromLong(1) : Py_NewRef(Py_None);
}

/* ``Runs.add(seconds, threads)``: its short path here — a warm run, no new fastest one on
   its thread count (all threads, or one once the probes are done), so only the last two
   change (and the count of runs on one thread) —, else the method. -1 with an exception
   set. */
static int add_run(PyObject *limits, PyObject *runs, double seconds, PyObject *threads) {
    int single = threads != Py_None; /* (one thread; another count: the method) */
    PyObject *fastest = slot(runs, single ? RUNS.one : RUNS.every), *last = slot(runs, RUNS.last);
    PyObject *limit = PyDict_GetItemWithError(limits, s_quick_run_s);
    if (limit == NULL && PyErr_Occurred()) return -1;
    int done = !single ? 1 : one_thread(threads) ? probed(limits, runs) : 0;
    long probes = 0;
    if (done < 0) return -1;
    PyObject *taken = PyFloat_FromDouble(seconds), *counted = NULL;
    if (taken == NULL) return -1;
    int result = 0;
    if (done == 1 && (!single || (count_of(runs, RUNS.probes, &probes) && probes < LONG_MAX &&
                                  (counted = PyLong_FromLong(probes + 1)) != NULL)) &&
        fastest != NULL && PyFloat_CheckExact(fastest) && last != NULL && limit != NULL && PyFloat_CheckExact(limit) &&
        PyFloat_AS_DOUBLE(limit) > seconds && seconds >= PyFloat_AS_DOUBLE(fastest)) {
        set_slot(runs, RUNS.before, last);
        set_slot(runs, RUNS.last, taken);
        if (counted != NULL) set_slot(runs, RUNS.probes, counted);
        set_slot(runs, RUNS.fast, Py_True);
    } else if (single && counted == NULL && PyErr_Occurred()) {
        result = -1;
    } else {
        PyObject *added = PyObject_CallMethodObjArgs(runs, s_add, taken, threads, NULL);
        result = added == NULL ? -1 : 0;
        Py_XDECREF(added);
    }
    Py_XDECREF(counted);
    Py_DECREF(taken);
    return result;
}

/* ``runs_threads(runs, limits)``, ``runs_add(runs, limits, seconds, threads)``: the two
   above on their own, for the tests that compare them with ``Runs.threads`` and
   ``Runs.add`` (``limits``: quick.py's globals; ``layout`` first). */
/* Whether ``runs`` is a ``quick.Runs`` whose slots ``layout`` found: 1, else 0 with a
   ``TypeError`` naming ``function``. */
static int laid_out_runs(PyObject *runs, const char *function) {
    if (runs_type != NULL && Py_TYPE(runs) == runs_type) return 1;
    PyErr_Format(PyExc_TypeError, "%s: a quick.Runs, after layout()", function);
    return 0;
}

static PyObject *runs_threads(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *runs, *limits;
    if (!PyArg_ParseTuple(args, "OO!:runs_threads", &runs, &PyDict_Type, &limits) ||
        !laid_out_runs(runs, "runs_threads"))
        return NULL;
    return slot(runs, RUNS.plain) == Py_True ? Py_NewRef(Py_None) : pick_threads(limits, runs);
}

static PyObject *runs_add(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *runs, *limits, *threads;
    double seconds;
    if (!PyArg_ParseTuple(args, "OO!dO:runs_add", &runs, &PyDict_Type, &limits, &seconds, &threads) ||
        !laid_out_runs(runs, "runs_add"))
        return NULL;
    return add_run(limits, runs, seconds, threads) < 0 ? NULL : Py_NewRef(Py_None);
}

/* The pending exception, taken: normalized, with its traceback attached. */
static PyObject *take_error(void) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL && value != NULL) PyException_SetTraceback(value, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
}

/* A handle as ``LaunchHandle(runtime, root, backend, FINISHED)`` makes it, with the
   record's arrays and durations (``quick``); NULL with an exception set. */
static PyObject *new_handle(const Spec *spec, PyObject *runtime, PyObject *record) {
    PyObject *generation = PyObject_GetAttr(runtime, s_generation);
    if (generation == NULL) return NULL;
    PyObject *handle = handle_type->tp_alloc(handle_type, 0);
    if (handle == NULL) {
        Py_DECREF(generation);
        return NULL;
    }
    set_slot(handle, HANDLE.runtime, runtime);
    set_slot(handle, HANDLE.root, slot(record, REPLAY.root));
    set_slot(handle, HANDLE.backend, slot(record, REPLAY.backend));
    set_slot(handle, HANDLE.outputs, Py_None);
    set_slot(handle, HANDLE.error, Py_None);
    set_slot(handle, HANDLE.done, spec->finished);
    set_slot(handle, HANDLE.arrays, slot(record, REPLAY.arrays));
    set_slot(handle, HANDLE.generation, generation);
    set_slot(handle, HANDLE.quick, slot(record, REPLAY.known));
    Py_DECREF(generation);
    return handle;
}

/* A compiled entry (the record's ``entry`` on all threads, its ``single`` on one) called
   with the arguments and the record's tail, timed into the key's runs as a run on
   ``threads``: its outputs as a tuple (made by the record's ``results`` where it has them),
   or NULL with the exception set. */
static PyObject *call_entry(const Spec *spec, PyObject *record, PyObject *runs, PyObject *entry,
                            PyObject *threads, PyObject *const *values) {
    PyObject *call[17];
    PyObject **called = spec->count < 17 ? call : PyMem_New(PyObject *, spec->count + 1);
    if (called == NULL) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < spec->count; i++) called[i] = values[i];
    called[spec->count] = slot(record, REPLAY.tail);
    double start = seconds_now();
    PyObject *outputs = PyObject_Vectorcall(entry, called, spec->count + 1, NULL);
    double taken = seconds_now() - start;
    if (called != call) PyMem_Free(called);
    if (outputs == NULL) return NULL;
    if (add_run(spec->limits, runs, taken, threads) < 0) {
        Py_DECREF(outputs);
        return NULL;
    }
    PyObject *results = slot(record, REPLAY.results);
    PyObject *made = results != NULL && results != Py_None ? PyObject_CallOneArg(results, outputs)
                     : PyTuple_CheckExact(outputs)         ? Py_NewRef(outputs)
                                                           : PySequence_Tuple(outputs);
    Py_DECREF(outputs);
    return made;
}

/* NumPy's flags that fix Numba's type of an array (C- and Fortran-contiguous, aligned,
   writeable): what a ``NativeCall``'s block records per array (``backends/base.py``). */
#define NATIVE_FLAGS (NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_F_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE)
#define NATIVE_SLOTS 64 /* (a block this long lives on the stack) */

typedef void (*native_fn)(int64_t *block);

/* A scalar argument's slot as the wrapper reads it (``native.py``'s ``kinds``): ``f`` a
   double's bits, ``b`` 0 or 1, ``s`` an integer's 64 bits (an unsigned one past 2**63 as
   its bits). Written per call for every scalar: a replay's key holds the value only of a
   scalar that changes the work (``LaunchPlan.neutral``), and a float equal to the record's
   may have other bits (``-0.0`` for ``0.0``). 1 written; 0 where the value cannot be
   (nothing set: the caller calls the dispatcher, which converts or refuses as it would). */
static int scalar_bits(PyObject *value, char kind, int64_t *slot) {
    if (kind == 'f') {
        double number = PyFloat_CheckExact(value) ? PyFloat_AS_DOUBLE(value) : PyFloat_AsDouble(value);
        if (number == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        memcpy(slot, &number, sizeof number);
        return 1;
    }
    if (kind == 'b') {
        int truth = PyObject_IsTrue(value);
        if (truth < 0) {
            PyErr_Clear();
            return 0;
        }
        *slot = truth;
        return 1;
    }
    if (kind != 's') return 0;
    PyObject *number = PyLong_Check(value) ? Py_NewRef(value) : PyNumber_Index(value);
    if (number == NULL) {
        PyErr_Clear();
        return 0;
    }
    int overflow = 0;
    long long bits = PyLong_AsLongLongAndOverflow(number, &overflow);
    if (overflow > 0) { /* (a uint64 past 2**63: its bits) */
        unsigned long long wide = PyLong_AsUnsignedLongLong(number);
        if (wide == (unsigned long long)-1 && PyErr_Occurred()) overflow = -1;
        else memcpy(&bits, &wide, sizeof bits);
    }
    Py_DECREF(number);
    if (overflow < 0 || (bits == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *slot = (int64_t)bits;
    return 1;
}

/* A NumPy scalar of ``type`` (the port's: ``code`` its dtype's character) holding the
   output ``integer`` or ``number``, as ``type(value)`` would make it but without its
   conversion machinery (0.4–0.6 µs a scalar, a third of a replayed launch of GenHPVM's
   saxpy): allocated as NumPy allocates its scalars (``tp_alloc``) and its value set
   (``arrayscalars.h``'s layouts, checked against the type's size). NULL with nothing set
   where ``type`` is not that scalar type: the caller calls it then. */
#define SCALAR(cls, value)                                                                                   \
    if (type->tp_basicsize == (Py_ssize_t)sizeof(Py##cls##ScalarObject)) {                                  \
        made = type->tp_alloc(type, 0);                                                                      \
        if (made != NULL) ((Py##cls##ScalarObject *)made)->obval = (value);                                  \
    }                                                                                                        \
    break;
static PyObject *numpy_scalar(PyTypeObject *type, char code, long long integer, unsigned long long bits,
                              double number) {
    PyObject *made = NULL;
    switch (code) {
    case 'f': SCALAR(Float, (float)number)
    case 'd': SCALAR(Double, number)
    case 'b': SCALAR(Byte, (signed char)integer)
    case 'h': SCALAR(Short, (short)integer)
    case 'i': SCALAR(Int, (int)integer)
    case 'l': SCALAR(Long, (long)integer)
    case 'q': SCALAR(LongLong, (npy_longlong)integer)
    case 'B': SCALAR(UByte, (unsigned char)bits)
    case 'H': SCALAR(UShort, (unsigned short)bits)
    case 'I': SCALAR(UInt, (unsigned int)bits)
    case 'L': SCALAR(ULong, (unsigned long)bits)
    case 'Q': SCALAR(ULongLong, (npy_ulonglong)bits)
    default: break;
    }
    return made;
}
#undef SCALAR

/* The outputs a native call left in ``slots`` (``NativeCall.returns``: how each was written;
   ``makers``: the type each becomes, ``codes`` its dtype's character): a new tuple, or NULL
   with the exception set. */
static PyObject *native_outputs(const int64_t *slots, PyObject *returns, PyObject *makers, PyObject *codes) {
    Py_ssize_t count = PyBytes_GET_SIZE(returns);
    const char *how = PyBytes_AS_STRING(returns), *code = PyBytes_AS_STRING(codes);
    PyObject *made = PyTuple_New(count);
    for (Py_ssize_t k = 0; made != NULL && k < count; k++) {
        double number;
        long long integer = (long long)slots[k];
        unsigned long long bits = (unsigned long long)slots[k];
        if (how[k] == 'f') { /* (an integer port given a float: never from Numba, cut off safely) */
            memcpy(&number, &slots[k], sizeof number);
            integer = number > -9.2e18 && number < 9.2e18 ? (long long)number : 0;
            bits = number >= 0.0 && number < 1.8e19 ? (unsigned long long)number : 0;
        } else {
            number = how[k] == 'u' ? (double)bits : (double)integer;
        }
        PyObject *maker = PyTuple_GET_ITEM(makers, k);
        PyObject *typed = how[k] == 'b' || !PyType_Check(maker)
                              ? NULL
                              : numpy_scalar((PyTypeObject *)maker, code[k], integer, bits, number);
        if (typed == NULL && !PyErr_Occurred()) { /* (a bool, or another type: made by the type itself) */
            PyObject *value = how[k] == 'f'   ? PyFloat_FromDouble(number)
                              : how[k] == 'u' ? PyLong_FromUnsignedLongLong(bits)
                              : how[k] == 'b' ? PyBool_FromLong(slots[k] != 0)
                                              : PyLong_FromLongLong(integer);
            typed = value == NULL ? NULL : PyObject_CallOneArg(maker, value);
            Py_XDECREF(value);
        }
        if (typed == NULL) Py_CLEAR(made);
        else PyTuple_SET_ITEM(made, k, typed);
    }
    return made;
}

/* A ``NativeCall`` (``native``: address, template, failed, kinds, owner, returns, makers, codes)
   run with the arguments, timed into the key's runs as a run on ``threads``: 1 done
   (``*outputs`` the root's outputs: ``native_outputs``), 0 it
   does not apply (an array's flags or rank are not the template's: the caller calls the
   dispatcher instead; nothing ran), -1 with the exception set (what ``failed`` raised for
   the status, or a Python exception the run set). */
static int call_native(const Spec *spec, PyObject *runs, PyObject *native, PyObject *threads,
                       PyObject *const *values, PyObject **outputs) {
    if (!PyTuple_Check(native) || PyTuple_GET_SIZE(native) < 4 || !PyLong_Check(PyTuple_GET_ITEM(native, 0)) ||
        !PyBytes_CheckExact(PyTuple_GET_ITEM(native, 1)) || !PyBytes_CheckExact(PyTuple_GET_ITEM(native, 3)) ||
        PyBytes_GET_SIZE(PyTuple_GET_ITEM(native, 3)) != spec->count)
        return 0;
    PyObject *template = PyTuple_GET_ITEM(native, 1);
    const char *kinds = PyBytes_AS_STRING(PyTuple_GET_ITEM(native, 3));
    PyObject *returns = PyTuple_GET_SIZE(native) >= 8 ? PyTuple_GET_ITEM(native, 5) : NULL;
    PyObject *makers = PyTuple_GET_SIZE(native) >= 8 ? PyTuple_GET_ITEM(native, 6) : NULL;
    PyObject *codes = PyTuple_GET_SIZE(native) >= 8 ? PyTuple_GET_ITEM(native, 7) : NULL;
    if (returns != NULL &&
        (!PyBytes_CheckExact(returns) || !PyTuple_CheckExact(makers) || !PyBytes_CheckExact(codes) ||
         PyTuple_GET_SIZE(makers) != PyBytes_GET_SIZE(returns) || PyBytes_GET_SIZE(codes) != PyBytes_GET_SIZE(returns)))
        return 0;
    Py_ssize_t returned = returns == NULL ? 0 : PyBytes_GET_SIZE(returns);
    Py_ssize_t slots = PyBytes_GET_SIZE(template) / (Py_ssize_t)sizeof(int64_t);
    /* (the status's two slots, then the outputs': what the arguments may not reach) */
    Py_ssize_t end = slots - 2 - returned;
    if (end < 0 || PyBytes_GET_SIZE(template) % (Py_ssize_t)sizeof(int64_t) != 0) return 0;
    native_fn function = (native_fn)PyLong_AsVoidPtr(PyTuple_GET_ITEM(native, 0));
    if (function == NULL) {
        PyErr_Clear();
        return 0;
    }
    int64_t small[NATIVE_SLOTS];
    int64_t *block = slots <= NATIVE_SLOTS ? small : PyMem_New(int64_t, slots);
    if (block == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(block, PyBytes_AS_STRING(template), (size_t)slots * sizeof(int64_t));
    Py_ssize_t at = 0;
    int fits = 1;
    for (Py_ssize_t i = 0; i < spec->count && fits; i++) {
        int kind = spec->ports[i].kind;
        if (kind != PORT_ARRAY && kind != PORT_POINTER) {
            if (at >= end || !scalar_bits(values[i], kinds[i], &block[at])) {
                fits = 0;
                break;
            }
            at += 1;
            continue;
        }
        if (kinds[i] != 'a') {
            fits = 0;
            break;
        }
        PyArrayObject *array = (PyArrayObject *)values[i]; /* (an ndarray: the acceptance test said so) */
        int rank = PyArray_NDIM(array);
        int64_t expected = ((int64_t)(PyArray_FLAGS(array) & NATIVE_FLAGS)) | ((int64_t)rank << 32);
        if (at + 2 + 2 * (Py_ssize_t)rank > end || block[at] != expected) {
            fits = 0;
            break;
        }
        block[at + 1] = (int64_t)(intptr_t)PyArray_DATA(array);
        for (int d = 0; d < rank; d++) {
            block[at + 2 + d] = (int64_t)PyArray_DIMS(array)[d];
            block[at + 2 + rank + d] = (int64_t)PyArray_STRIDES(array)[d];
        }
        at += 2 + 2 * (Py_ssize_t)rank;
    }
    int result = 0;
    if (fits) {
        double start = seconds_now();
        function(block);
        double taken = seconds_now() - start;
        int64_t code = block[end], info = block[end + 1];
        if (code == 0 && !PyErr_Occurred()) {
            result = add_run(spec->limits, runs, taken, threads) < 0 ? -1 : 1;
            if (result == 1) {
                *outputs = returned == 0 ? PyTuple_New(0) : native_outputs(&block[end + 2], returns, makers, codes);
                if (*outputs == NULL) result = -1;
            }
        } else if (PyErr_Occurred()) {
            result = -1; /* (a Python exception the run set on this thread) */
        } else {
            PyObject *raised =
                PyObject_CallFunction(PyTuple_GET_ITEM(native, 2), "LL", (long long)code, (long long)info);
            Py_XDECREF(raised);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "a native call failed and nothing was raised");
            result = -1;
        }
    }
    if (block != small) PyMem_Free(block);
    return result;
}

/* The record's runner called with ``args`` and ``threads``, timed into the key's runs: its
   outputs, or NULL with the exception set. */
static PyObject *call_runner(const Spec *spec, PyObject *args, PyObject *runs, PyObject *runner, PyObject *threads) {
    double start = seconds_now();
    PyObject *outputs = PyObject_CallFunctionObjArgs(runner, args, threads, NULL);
    double taken = seconds_now() - start;
    if (outputs != NULL && add_run(spec->limits, runs, taken, threads) < 0) Py_CLEAR(outputs);
    return outputs;
}

/* The run of a held record: the handle, the thread count (all where the key's runs are
   ``plain``, else what ``Runs.threads`` picks), the run — a compiled entry called directly
   where the back end gave one for that count (``entry`` for all threads, ``single`` for
   one), as the runner would call it, past Numba's dispatcher where the record has it as a
   ``NativeCall`` that fits the arguments, else the runner —, its time added to the key's
   runs. The handle, or NULL with Ctrl-C (or a failure to make the handle) set. */
static PyObject *run(const Spec *spec, PyObject *args, PyObject *runtime, PyObject *record, PyObject *runs,
                     PyObject *entry, PyObject *single, PyObject *runner, PyObject *const *values) {
    PyObject *handle = new_handle(spec, runtime, record);
    if (handle == NULL) return NULL;
    PyObject *threads = slot(runs, RUNS.plain) == Py_True ? Py_NewRef(Py_None) : pick_threads(spec->limits, runs);
    PyObject *outputs = NULL, *call = NULL;
    if (threads != NULL) {
        int alone = threads != Py_None && one_thread(threads);
        call = threads == Py_None ? entry : single != NULL && alone ? single : NULL;
        PyObject *native = call == NULL ? NULL : slot(record, alone ? REPLAY.native_single : REPLAY.native);
        int ran = native != NULL && native != Py_None ? call_native(spec, runs, native, threads, values, &outputs) : 0;
        if (ran == 0)
            outputs = call != NULL ? call_entry(spec, record, runs, call, threads, values)
                                   : call_runner(spec, args, runs, runner, threads);
        Py_DECREF(threads);
    }
    int direct = call != NULL;
    if (outputs != NULL) {
        set_slot(handle, HANDLE.outputs, outputs);
        Py_DECREF(outputs);
        return handle;
    }
    PyObject *error = take_error();
    if (error == NULL) { /* (NULL without an exception: a broken callable) */
        Py_DECREF(handle);
        PyErr_SetString(PyExc_SystemError, "a replayed run failed without an exception");
        return NULL;
    }
    if (direct && PyObject_IsInstance(error, PyExc_Exception) == 1) {
        /* (the entry's error, worded as the runner would: ``failed_run`` returns it) */
        PyObject *worded = PyObject_CallFunctionObjArgs(spec->failed_run, record, args, error, NULL);
        Py_DECREF(error);
        error = worded != NULL ? worded : take_error();
    }
    if (PyErr_GivenExceptionMatches(error, PyExc_KeyboardInterrupt)) {
        Py_DECREF(handle);
        PyErr_SetObject((PyObject *)Py_TYPE(error), error);
        Py_DECREF(error);
        return NULL; /* (Ctrl-C: raised by launch itself) */
    }
    set_slot(handle, HANDLE.error, error); /* (delivered to the host at wait) */
    Py_DECREF(error);
    return handle;
}

/* One more replay of ``record`` counted (``Replay.hits``, up to ``hot_replays``), and at
   ``hot_replays`` ``hot(record, args)`` called. An error it raises is reported as
   unraisable (the launch ran; a faster path not made is not its failure): 0. Ctrl-C (any
   ``BaseException`` that is not an ``Exception``) is left set, for the launch to raise:
   -1. */
static int count_hit(const Spec *spec, PyObject *record, PyObject *args) {
    long hits;
    if (!count_of(record, REPLAY.hits, &hits) || hits >= spec->hot_replays) return 0;
    PyObject *counted = PyLong_FromLong(hits + 1);
    if (counted == NULL) return -1;
    set_slot(record, REPLAY.hits, counted);
    Py_DECREF(counted);
    if (hits + 1 < spec->hot_replays) return 0;
    PyObject *done = PyObject_CallFunctionObjArgs(spec->hot, record, args, NULL);
    if (done != NULL) {
        Py_DECREF(done);
        return 0;
    }
    if (!PyErr_ExceptionMatches(PyExc_Exception)) return -1;
    PyErr_WriteUnraisable(spec->hot);
    return 0;
}

/* ``replay(args, runtime)``: the handle of a replayed launch, or None (nothing held or
   run). */
static PyObject *replay(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    Spec *spec = (Spec *)self;
    if (argc != 2) {
        PyErr_SetString(PyExc_TypeError, "replay(args, runtime) takes 2 arguments");
        return NULL;
    }
    PyObject *args = argv[0], *runtime = argv[1];
    Py_ssize_t count = spec->count;
    if (!(PyTuple_CheckExact(args) || PyList_CheckExact(args)) || Py_SIZE(args) != count) Py_RETURN_NONE;
    PyObject *small[16];
    PyObject **values = count <= 16 ? small : PyMem_New(PyObject *, count);
    if (values == NULL) return PyErr_NoMemory();
    PyObject **items = PyTuple_CheckExact(args) ? &PyTuple_GET_ITEM(args, 0) : PySequence_Fast_ITEMS(args);
    for (Py_ssize_t i = 0; i < count; i++) {
        values[i] = items[i];
        Py_INCREF(values[i]); /* (a list's items: the tests below may run Python code) */
    }
    PyObject *result = NULL, *key = NULL, *tracker = NULL, *record = NULL, *holds = NULL, *runs = NULL;
    PyObject *entry = NULL, *single = NULL, *runner = NULL;
    int state = 1;
    for (Py_ssize_t i = 0; i < count && state == 1; i++) state = accepts(spec, &spec->ports[i], values[i]);
    if (state != 1) goto out; /* (0: None; -1: the test's exception) */
    tracker = PyObject_GetAttr(runtime, s_tracker);
    if (tracker == NULL) goto fail;
    /* (``hold_replay``: nothing on a device, a record kept under the key) */
    if ((state = truth(tracker, s_device_entries)) != 0 || (state = truth(tracker, s_versioned)) != 0) {
        state = state == 1 ? 0 : state;
        goto out;
    }
    long long version = table_version(tracker);
    record = version >= 0 ? cached(spec, tracker, version, values) : NULL;
    if (record == NULL) {
        if (PyErr_Occurred()) goto fail;
        key = replay_key(spec, values);
        PyObject *replays = key != NULL ? PyObject_GetAttr(tracker, s_replays) : NULL;
        if (replays == NULL) goto fail;
        record = PyDict_Check(replays) ? PyDict_GetItemWithError(replays, key) : NULL;
        Py_XINCREF(record);
        Py_DECREF(replays);
        if (record == NULL) {
            state = PyErr_Occurred() ? -1 : 0;
            goto out;
        }
        if (version >= 0) remember(spec, tracker, version, key, record);
    }
    PyObject *tokens = Py_TYPE(record) == replay_type ? slot(record, REPLAY.holds) : NULL;
    PyObject *found = Py_TYPE(record) == replay_type ? slot(record, REPLAY.runs) : NULL;
    if (tokens == NULL || !PyTuple_CheckExact(tokens) || found == NULL || Py_TYPE(found) != runs_type)
        goto python; /* (not a record as ``plan.Replay`` makes it: the Python replay decides) */
    holds = Py_NewRef(tokens);
    runs = Py_NewRef(found);
    if (hold(holds) < 0) goto fail;
    /* (``hold_replay``: tokens first, then the epoch; then the replay's own tests: the key's
       runs quick, the runner current. ``state``: 0 all pass, 1 one does not, -1 an error) */
    PyObject *backend = slot(record, REPLAY.backend), *fast = slot(runs, RUNS.fast);
    state = differs(slot(record, REPLAY.epoch), tracker, s_replay_epoch);
    if (state == 0) state = fast == NULL ? 1 : 1 - PyObject_IsTrue(fast); /* (IsTrue -1: 2, an error) */
    if (state == 2) state = -1;
    if (state == 0) state = backend == NULL ? 1 : differs(slot(record, REPLAY.version), backend, s_runners_version);
    if (state != 0) {
        release(holds);
        state = state == 1 ? 0 : -1; /* (a test failed: None) */
        goto out;
    }
    /* (the direct call where the back end gave one, the runner: both read now, since a test
       may replace the record's while it runs) */
    PyObject *call = slot(record, REPLAY.entry);
    entry = call != NULL && call != Py_None ? Py_NewRef(call) : NULL;
    PyObject *one = slot(record, REPLAY.single);
    single = one != NULL && one != Py_None ? Py_NewRef(one) : NULL;
    runner = slot(record, REPLAY.runner);
    Py_XINCREF(runner);
    if (runner == NULL || slot(record, REPLAY.tail) == NULL || slot(record, REPLAY.root) == NULL ||
        slot(record, REPLAY.arrays) == NULL || slot(record, REPLAY.known) == NULL) {
        release(holds);
        goto python; /* (a slot unset: not a record as ``plan.Replay`` makes it) */
    }
    result = run(spec, args, runtime, record, runs, entry, single, runner, values);
    release(holds);
    if (result != NULL && count_hit(spec, record, args) < 0) Py_CLEAR(result); /* (Ctrl-C in ``hot``) */
    goto out;
python:
    result = PyObject_CallFunctionObjArgs(spec->fallback, args, runtime, NULL);
    goto out;
fail:
    state = -1;
out:
    if (result == NULL && state != -1 && !PyErr_Occurred()) result = Py_NewRef(Py_None);
    Py_XDECREF(entry);
    Py_XDECREF(single);
    Py_XDECREF(runner);
    Py_XDECREF(runs);
    Py_XDECREF(holds);
    Py_XDECREF(record);
    Py_XDECREF(tracker);
    Py_XDECREF(key);
    for (Py_ssize_t i = 0; i < count; i++) Py_DECREF(values[i]);
    if (values != small) PyMem_Free(values);
    return result;
}

static PyMethodDef replay_def = {"replay", (PyCFunction)(void (*)(void))replay, METH_FASTCALL,
                                 "replay(args, runtime): a launch plan's replay (hpvm.runtime._replay)."};

/* The offset of ``cls.name``, a slot holding an object; -1 with an exception set. */
static Py_ssize_t offset_of(PyTypeObject *cls, const char *name) {
    PyObject *descriptor = PyObject_GetAttrString((PyObject *)cls, name);
    if (descriptor == NULL) return -1;
    Py_ssize_t offset = -1;
    if (Py_TYPE(descriptor) == &PyMemberDescr_Type) {
        PyMemberDef *member = ((PyMemberDescrObject *)descriptor)->d_member;
        if (member->type == T_OBJECT_EX && !(member->flags & READONLY)) offset = member->offset;
    }
    Py_DECREF(descriptor);
    if (offset < 0)
        PyErr_Format(PyExc_TypeError, "%s.%s is not a writable slot: the compiled replay cannot use it",
                     cls->tp_name, name);
    return offset;
}

#define OFFSET(table, cls, name)                                                                             \
    if ((table.name = offset_of(cls, #name)) < 0) return NULL

/* ``layout(Replay, Runs, LaunchHandle)``: where their slots are, once. */
static PyObject *layout(PyObject *Py_UNUSED(module), PyObject *args) {
    PyTypeObject *replay_cls, *runs_cls, *handle_cls;
    if (!PyArg_ParseTuple(args, "O!O!O!:layout", &PyType_Type, &replay_cls, &PyType_Type, &runs_cls, &PyType_Type,
                          &handle_cls))
        return NULL;
    OFFSET(REPLAY, replay_cls, holds);
    OFFSET(REPLAY, replay_cls, runs);
    OFFSET(REPLAY, replay_cls, version);
    OFFSET(REPLAY, replay_cls, backend);
    OFFSET(REPLAY, replay_cls, entry);
    OFFSET(REPLAY, replay_cls, single);
    OFFSET(REPLAY, replay_cls, native);
    OFFSET(REPLAY, replay_cls, native_single);
    OFFSET(REPLAY, replay_cls, results);
    OFFSET(REPLAY, replay_cls, hits);
    OFFSET(REPLAY, replay_cls, runner);
    OFFSET(REPLAY, replay_cls, tail);
    OFFSET(REPLAY, replay_cls, root);
    OFFSET(REPLAY, replay_cls, arrays);
    OFFSET(REPLAY, replay_cls, known);
    OFFSET(REPLAY, replay_cls, epoch);
    OFFSET(RUNS, runs_cls, fast);
    OFFSET(RUNS, runs_cls, plain);
    OFFSET(RUNS, runs_cls, every);
    OFFSET(RUNS, runs_cls, one);
    OFFSET(RUNS, runs_cls, probes);
    OFFSET(RUNS, runs_cls, choices);
    OFFSET(RUNS, runs_cls, other);
    OFFSET(RUNS, runs_cls, last);
    OFFSET(RUNS, runs_cls, before);
    OFFSET(HANDLE, handle_cls, runtime);
    OFFSET(HANDLE, handle_cls, root);
    OFFSET(HANDLE, handle_cls, backend);
    OFFSET(HANDLE, handle_cls, outputs);
    OFFSET(HANDLE, handle_cls, error);
    OFFSET(HANDLE, handle_cls, done);
    OFFSET(HANDLE, handle_cls, arrays);
    OFFSET(HANDLE, handle_cls, generation);
    OFFSET(HANDLE, handle_cls, quick);
    Py_XSETREF(replay_type, (PyTypeObject *)Py_NewRef(replay_cls));
    Py_XSETREF(runs_type, (PyTypeObject *)Py_NewRef(runs_cls));
    Py_XSETREF(handle_type, (PyTypeObject *)Py_NewRef(handle_cls));
    Py_RETURN_NONE;
}

static int spec_traverse(Spec *spec, visitproc visit, void *arg) {
    Py_VISIT(spec->plan);
    Py_VISIT(spec->fallback);
    Py_VISIT(spec->failed_run);
    Py_VISIT(spec->finished);
    Py_VISIT(spec->ndarray);
    Py_VISIT(spec->limits);
    Py_VISIT(spec->hot);
    for (Py_ssize_t i = 0; i < spec->count; i++) {
        Py_VISIT(spec->ports[i].dtype);
        Py_VISIT(spec->ports[i].types);
        Py_VISIT(spec->ports[i].lo);
        Py_VISIT(spec->ports[i].hi);
    }
    for (int k = 0; k < FOUND; k++) {
        Py_VISIT(spec->found[k].key);
        Py_VISIT(spec->found[k].record);
        Py_VISIT(spec->found[k].tracker);
    }
    return 0;
}

static int spec_clear(Spec *spec) {
    Py_CLEAR(spec->plan);
    Py_CLEAR(spec->fallback);
    Py_CLEAR(spec->failed_run);
    Py_CLEAR(spec->finished);
    Py_CLEAR(spec->ndarray);
    Py_CLEAR(spec->limits);
    Py_CLEAR(spec->hot);
    for (Py_ssize_t i = 0; i < spec->count; i++) {
        Py_CLEAR(spec->ports[i].dtype);
        Py_CLEAR(spec->ports[i].types);
        Py_CLEAR(spec->ports[i].lo);
        Py_CLEAR(spec->ports[i].hi);
    }
    for (int k = 0; k < FOUND; k++) forget_found(&spec->found[k]);
    return 0;
}

static void spec_dealloc(Spec *spec) {
    PyObject_GC_UnTrack(spec);
    spec_clear(spec);
    PyMem_Free(spec->ports);
    Py_TYPE(spec)->tp_free((PyObject *)spec);
}

static PyTypeObject SpecType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hpvm.runtime._replay.Spec",
    .tp_basicsize = sizeof(Spec),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "What a launch plan's compiled replay knows of its root's ports.",
    .tp_traverse = (traverseproc)spec_traverse,
    .tp_clear = (inquiry)spec_clear,
    .tp_dealloc = (destructor)spec_dealloc,
};

/* ``replayer(plan, ports, fallback, failed_run, FINISHED, ndarray, limits, hot, hot_replays, keyed)``:
   the replay of ``plan`` (after ``layout``); ``ports`` as ``launch.port_test`` describes them
   (an array's rank, its fourth item, is not read: a replay's key fixes it); ``keyed`` one
   byte per port, 0 for a scalar whose value the key leaves out (``LaunchPlan.neutral``). */
static PyObject *replayer(PyObject *module, PyObject *args) {
    PyObject *plan, *ports, *fallback, *failed_run, *finished, *ndarray, *limits, *hot, *keyed;
    long hot_replays;
    if (!PyArg_ParseTuple(args, "OO!OOOOO!OlO!:replayer", &plan, &PyTuple_Type, &ports, &fallback, &failed_run,
                          &finished, &ndarray, &PyDict_Type, &limits, &hot, &hot_replays, &PyBytes_Type, &keyed))
        return NULL;
    if (replay_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "layout() first");
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(ports);
    if (PyBytes_GET_SIZE(keyed) != count) {
        PyErr_SetString(PyExc_ValueError, "keyed must have one byte per port");
        return NULL;
    }
    Spec *spec = PyObject_GC_New(Spec, &SpecType);
    if (spec == NULL) return NULL;
    spec->count = 0;
    spec->next = 0;
    for (int k = 0; k < FOUND; k++) spec->found[k] = (Found){NULL, NULL, NULL, -1};
    spec->ports = PyMem_New(Port, count > 0 ? count : 1);
    spec->plan = spec->fallback = spec->failed_run = spec->finished = spec->ndarray = spec->limits = spec->hot = NULL;
    if (spec->ports == NULL) {
        PyObject_GC_Track(spec);
        Py_DECREF(spec);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Port *port = &spec->ports[i];
        port->dtype = port->types = port->lo = port->hi = NULL;
        port->written = 0;
        port->keyed = PyBytes_AS_STRING(keyed)[i] != 0;
        port->kind = PORT_NEVER;
        spec->count = i + 1;
        PyObject *kind = NULL, *a = Py_None, *b = Py_None, *c = Py_None;
        PyObject *item = PyTuple_GET_ITEM(ports, i);
        if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "U|OOO:port", &kind, &a, &b, &c)) goto bad;
        if (PyUnicode_CompareWithASCIIString(kind, "array") == 0 ||
            PyUnicode_CompareWithASCIIString(kind, "pointer") == 0) {
            port->kind = PyUnicode_CompareWithASCIIString(kind, "array") == 0 ? PORT_ARRAY : PORT_POINTER;
            port->dtype = Py_NewRef(a);
            port->written = PyObject_IsTrue(b) == 1;
        } else if (PyUnicode_CompareWithASCIIString(kind, "types") == 0) {
            port->kind = PORT_TYPES;
            port->types = Py_NewRef(a);
        } else if (PyUnicode_CompareWithASCIIString(kind, "int") == 0) {
            port->kind = PORT_INT;
            port->types = Py_NewRef(a);
            port->lo = Py_NewRef(b);
            port->hi = Py_NewRef(c);
        } else if (PyUnicode_CompareWithASCIIString(kind, "never") != 0) {
            PyErr_Format(PyExc_ValueError, "unknown port kind %R", kind);
            goto bad;
        }
        if ((port->kind == PORT_TYPES || port->kind == PORT_INT) && !PyAnySet_Check(port->types)) {
            PyErr_SetString(PyExc_TypeError, "a scalar port's types must be a set");
            goto bad;
        }
    }
    spec->plan = Py_NewRef(plan);
    spec->fallback = Py_NewRef(fallback);
    spec->failed_run = Py_NewRef(failed_run);
    spec->finished = Py_NewRef(finished);
    spec->ndarray = Py_NewRef(ndarray);
    spec->limits = Py_NewRef(limits);
    spec->hot = Py_NewRef(hot);
    spec->hot_replays = hot_replays;
    PyObject_GC_Track(spec);
    PyObject *function = PyCFunction_NewEx(&replay_def, (PyObject *)spec, module);
    Py_DECREF(spec);
    return function;
bad:
    PyObject_GC_Track(spec);
    Py_DECREF(spec);
    return NULL;
}

/* ---------------------------------------------------------------------------------------
   any_shared(ours, theirs, ndarray): whether an array of the list ``ours`` may share memory
   with one of ``theirs`` — NumPy's ``may_share_memory`` (bounds only) over every pair, as
   ``runtime/replicas.py``'s ``_any_shared`` asks it.

   Why in C: a stream's replica asks it for every item it may start (``Footprint.overlaps``,
   under the stream's lock): the edge detection's whole frames are six written arrays against
   eight, 60 pairs, each a call of ``may_share_memory`` from Python — 12.8 us a frame on a quiet
   core, 39 us of CPU in the stream (docs/backends/cpu-performance.md). Here each array's byte
   extent is read once from its fields, as NumPy's ``get_array_memory_extents`` computes it:
   [data + the sum of its negative axis offsets, data + the sum of the positive ones +
   itemsize), empty where an axis is empty; two arrays may share memory when their extents
   overlap. The item size is the dtype's ``itemsize`` attribute (NumPy's accessor for it
   needs the API table this module does without). Anything not an ndarray: a TypeError. */

typedef struct {
    uintptr_t start, end;
} Extent;

static PyObject *s_itemsize;

static int extent_of(PyObject *value, PyObject *ndarray, Extent *out) {
    if (!PyObject_TypeCheck(value, (PyTypeObject *)ndarray)) {
        PyErr_Format(PyExc_TypeError, "any_shared: %R is not an ndarray", value);
        return -1;
    }
    PyArrayObject *array = (PyArrayObject *)value;
    PyObject *size = PyObject_GetAttr((PyObject *)PyArray_DESCR(array), s_itemsize);
    if (size == NULL) return -1;
    Py_ssize_t itemsize = PyLong_AsSsize_t(size);
    Py_DECREF(size);
    if (itemsize == -1 && PyErr_Occurred()) return -1;
    intptr_t lower = 0, upper = 0;
    for (int d = 0; d < PyArray_NDIM(array); d++) {
        npy_intp extent = PyArray_DIMS(array)[d];
        if (extent == 0) { /* (no element: no memory) */
            out->start = out->end = (uintptr_t)PyArray_DATA(array);
            return 0;
        }
        intptr_t offset = (intptr_t)PyArray_STRIDES(array)[d] * (intptr_t)(extent - 1);
        if (offset > 0) upper += offset;
        else lower += offset;
    }
    out->start = (uintptr_t)PyArray_DATA(array) + (uintptr_t)lower;
    out->end = (uintptr_t)PyArray_DATA(array) + (uintptr_t)(upper + itemsize);
    return 0;
}

/* The extents of the list ``values`` (a new block, or NULL with an exception set). */
static Extent *extents_of(PyObject *values, PyObject *ndarray, Py_ssize_t *count) {
    if (!PyList_Check(values)) {
        PyErr_SetString(PyExc_TypeError, "any_shared: the arrays must come in lists");
        return NULL;
    }
    *count = PyList_GET_SIZE(values);
    Extent *extents = PyMem_Malloc(sizeof(Extent) * (size_t)(*count > 0 ? *count : 1));
    if (extents == NULL) return (Extent *)PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < *count; i++) {
        if (extent_of(PyList_GET_ITEM(values, i), ndarray, &extents[i]) < 0) {
            PyMem_Free(extents);
            return NULL;
        }
    }
    return extents;
}

static PyObject *any_shared(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "any_shared(ours, theirs, ndarray) takes three arguments");
        return NULL;
    }
    Py_ssize_t n_ours, n_theirs;
    Extent *ours = extents_of(args[0], args[2], &n_ours);
    if (ours == NULL) return NULL;
    Extent *theirs = extents_of(args[1], args[2], &n_theirs);
    if (theirs == NULL) {
        PyMem_Free(ours);
        return NULL;
    }
    int shared = 0;
    for (Py_ssize_t i = 0; i < n_ours && !shared; i++) {
        for (Py_ssize_t j = 0; j < n_theirs && !shared; j++) {
            const Extent *a = &ours[i], *b = &theirs[j];
            shared = a->start < a->end && b->start < b->end && a->start < b->end && b->start < a->end;
        }
    }
    PyMem_Free(ours);
    PyMem_Free(theirs);
    return PyBool_FromLong(shared);
}

static PyMethodDef methods[] = {
    {"any_shared", (PyCFunction)(void (*)(void))any_shared, METH_FASTCALL,
     "any_shared(ours, theirs, ndarray): whether an array of ours may share memory with one of theirs."},
    {"layout", layout, METH_VARARGS, "layout(Replay, Runs, LaunchHandle): where their slots are."},
    {"runs_threads", runs_threads, METH_VARARGS, "runs_threads(runs, limits): Runs.threads() as the replay makes it."},
    {"runs_add", runs_add, METH_VARARGS, "runs_add(runs, limits, seconds, threads): Runs.add as the replay makes it."},
    {"replayer", replayer, METH_VARARGS,
     "replayer(plan, ports, fallback, failed_run, FINISHED, ndarray, limits, hot, hot_replays, keyed): a launch "
     "plan's replay in C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "hpvm.runtime._replay",
    "A launch plan's replay, and the footprint check of streamed items, in C (runtime/fastpath.py).", -1,
    methods,
};

#define INTERN(var, text)                                                                                    \
    if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

PyMODINIT_FUNC PyInit__replay(void) {
    if (PyType_Ready(&SpecType) < 0) return NULL;
    INTERN(s_tracker, "tracker");
    INTERN(s_device_entries, "_device_entries");
    INTERN(s_versioned, "_versioned");
    INTERN(s_replays, "replays");
    INTERN(s_replay_epoch, "replay_epoch");
    INTERN(s_runners_version, "runners_version");
    INTERN(s_generation, "generation");
    INTERN(s_add, "add");
    INTERN(s_threads, "threads");
    INTERN(s_probes_limit, "ONE_THREAD_PROBES");
    INTERN(s_recheck_every, "RECHECK_EVERY");
    INTERN(s_recheck_runs, "RECHECK_RUNS");
    INTERN(s_recheck_far_every, "RECHECK_FAR_EVERY");
    INTERN(s_one_thread_far, "ONE_THREAD_FAR");
    INTERN(s_shape, "shape");
    INTERN(s_quick_run_s, "QUICK_RUN_S");
    INTERN(s_replays_version, "replays_version");
    INTERN(s_itemsize, "itemsize");
    return PyModule_Create(&module_def);
}
