// Pinning a process to one CPU and reading the CPU time a process has used, for the echo
// rows' server CPU per message (issue 29's "CPU per message of a plain libuv C echo
// server"). In C because glibc's CPU_SET macros do not reach Swift.
#define _GNU_SOURCE
#include "CNetBench.h"

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

/// Calls `each` with every thread id of process `pid` (from /proc/PID/task); returns -1 if
/// the process is gone, else 0 or the first nonzero result of `each` (the walk goes on).
static int for_each_thread(int pid, int (*each)(int tid, void *context), void *context) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *tasks = opendir(path);
    if (tasks == NULL) return -1;
    int result = 0;
    struct dirent *entry;
    while ((entry = readdir(tasks)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        int r = each(atoi(entry->d_name), context);
        if (result == 0) result = r;
    }
    closedir(tasks);
    return result;
}

static int pin_thread(int tid, void *context) {
    return sched_setaffinity(tid, sizeof(cpu_set_t), (cpu_set_t *)context) == 0 ? 0 : -1;
}

int cnb_pin_to_cpu(int pid, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pid == 0) return pin_thread(0, &set);
    // sched_setaffinity moves one thread: pin every thread the process has (threads it
    // starts later inherit the mask of the thread that starts them).
    return for_each_thread(pid, pin_thread, &set) == 0 ? 0 : -1;
}

struct cpu_sum {
    int pid;
    int64_t total;
};

static int add_thread_cpu(int tid, void *context) {
    struct cpu_sum *sum = context;
    char file[96];
    snprintf(file, sizeof file, "/proc/%d/task/%d/schedstat", sum->pid, tid);
    FILE *f = fopen(file, "r");
    if (f == NULL) return 0;  // the thread ended between readdir and fopen
    long long ns = 0;
    if (fscanf(f, "%lld", &ns) == 1) sum->total += ns;
    fclose(f);
    return 0;
}

int64_t cnb_process_cpu_ns(int pid) {
    // Each thread's schedstat starts with the nanoseconds it has run on a CPU (user and
    // kernel time together, at the scheduler's resolution, not the 10 ms of /proc/PID/stat's
    // ticks); the process's time is their sum. A thread that already exited is not counted:
    // the echo servers run one thread.
    struct cpu_sum sum = {pid, 0};
    return for_each_thread(pid, add_thread_cpu, &sum) < 0 ? -1 : sum.total;
}
