/* Marks for instruction counting under valgrind's callgrind (tests/bench/instructions.py).
 *
 * The worker loads this library with ctypes and calls bench_start() after its warm-up calls,
 * bench_dump(label) after each measured window, bench_stop() after the last: callgrind runs with
 * --instr-atstart=no, so start-up and imports run uninstrumented (fast), and each dump writes the
 * instructions since the previous mark to its own file, labelled "Client Request: <label>".
 * Outside valgrind each macro is a few no-op instructions.
 */
#include <valgrind/callgrind.h>

void bench_start(void) {
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
}

void bench_dump(const char *label) {
    CALLGRIND_DUMP_STATS_AT(label);
}

void bench_stop(void) {
    CALLGRIND_STOP_INSTRUMENTATION;
}
