// Pinning a process to one CPU and reading the CPU time a process has used, for the echo
// rows' server CPU per message (issue 29's "CPU per message of a plain libuv C echo
// server"). In C because glibc's CPU_SET macros do not reach Swift.
#define _GNU_SOURCE
#include "CNetBench.h"

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

int cnb_pin_to_cpu(int pid, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pid == 0) return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : -1;
    // sched_setaffinity moves one thread: pin every thread the process has (threads it
    // starts later inherit the mask of the thread that starts them).
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *tasks = opendir(path);
    if (tasks == NULL) return -1;
    int result = 0;
    struct dirent *entry;
    while ((entry = readdir(tasks)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        if (sched_setaffinity(atoi(entry->d_name), sizeof set, &set) != 0) result = -1;
    }
    closedir(tasks);
    return result;
}

int64_t cnb_process_cpu_ns(int pid) {
    // Each thread's schedstat starts with the nanoseconds it has run on a CPU (user and
    // kernel time together, at the scheduler's resolution, not the 10 ms of /proc/PID/stat's
    // ticks); the process's time is their sum. A thread that already exited is not counted:
    // the echo servers run one thread.
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *tasks = opendir(path);
    if (tasks == NULL) return -1;
    int64_t total = 0;
    struct dirent *entry;
    while ((entry = readdir(tasks)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        char file[320];
        snprintf(file, sizeof file, "/proc/%d/task/%s/schedstat", pid, entry->d_name);
        FILE *f = fopen(file, "r");
        if (f == NULL) continue;  // the thread ended between readdir and fopen
        long long ns = 0;
        if (fscanf(f, "%lld", &ns) == 1) total += ns;
        fclose(f);
    }
    closedir(tasks);
    return total;
}
