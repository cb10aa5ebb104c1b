// A stand-in for libnvidia-ml.so.1 that exports the few NVML functions air's reader calls
// (core/health/nvml.cc). Its GPUs are the lines of the file named by AIR_FAKE_NVML_STATE, read at every
// call: "UTIL_PERCENT MEMORY_USED_MB MEMORY_TOTAL_MB POWER_W [MEMORY_UTIL_PERCENT]" (power -1: not reported;
// memory utilisation, NVML's "memory" rate, defaults to UTIL_PERCENT: a busy GPU reads and writes its memory,
// while 0 with UTIL > 0 is a kernel spinning on a flag). Tests and e2e scripts rewrite the file to make a node's
// GPUs busy, spinning or idle.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {

typedef struct { unsigned int gpu, memory; } fake_util;
typedef struct { unsigned long long total, free, used; } fake_memory;

static int g_init = 0;

// The state file: AIR_FAKE_NVML_STATE, where "{node}" stands for the value of this process's --node
// argument (so the two agents of an e2e run on one machine read different files).
static void state_path(char* out, size_t size) {
  const char* tmpl = getenv("AIR_FAKE_NVML_STATE");
  out[0] = 0;
  if (!tmpl) return;
  char node[32] = "";
  FILE* c = fopen("/proc/self/cmdline", "r");
  if (c) {
    char args[8192];
    size_t n = fread(args, 1, sizeof args - 1, c);
    fclose(c);
    args[n] = 0;
    for (size_t i = 0; i < n; i += strlen(args + i) + 1)
      if (strcmp(args + i, "--node") == 0 && i + 7 < n) {
        snprintf(node, sizeof node, "%s", args + i + 7);
        break;
      }
  }
  const char* at = strstr(tmpl, "{node}");
  if (!at) snprintf(out, size, "%s", tmpl);
  else snprintf(out, size, "%.*s%s%s", (int)(at - tmpl), tmpl, node, at + 6);
}

// GPU `index`'s line; returns 0 when there is none.
static int gpu_line(unsigned int index, double v[5]) {
  char path[4096];
  state_path(path, sizeof path);
  FILE* f = path[0] ? fopen(path, "r") : NULL;
  if (!f) return 0;
  unsigned int i = 0;
  int found = 0;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    int n = sscanf(line, "%lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4]);
    if (n < 4) continue;
    if (n == 4) v[4] = v[0];
    if (i++ == index) { found = 1; break; }
  }
  fclose(f);
  return found;
}

int nvmlInit_v2(void) {
  if (getenv("AIR_FAKE_NVML_FAIL_INIT")) return 9; // NVML_ERROR_DRIVER_NOT_LOADED
  g_init = 1;
  return 0;
}
int nvmlShutdown(void) { g_init = 0; return 0; }
int nvmlDeviceGetCount_v2(unsigned int* n) {
  double v[5];
  unsigned int i = 0;
  if (!g_init) return 1;
  while (gpu_line(i, v)) ++i;
  *n = i;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** dev) {
  double v[5];
  if (!g_init || !gpu_line(index, v)) return 2; // NVML_ERROR_INVALID_ARGUMENT
  *dev = (void*)(unsigned long)(index + 1);
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* dev, void* out) {
  fake_util* u = (fake_util*)out;
  double v[5];
  if (!gpu_line((unsigned int)(unsigned long)dev - 1, v)) return 2;
  u->gpu = (unsigned int)v[0];
  u->memory = (unsigned int)v[4];
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* dev, void* out) {
  fake_memory* m = (fake_memory*)out;
  double v[5];
  if (!gpu_line((unsigned int)(unsigned long)dev - 1, v)) return 2;
  m->used = (unsigned long long)(v[1] * 1e6);
  m->total = (unsigned long long)(v[2] * 1e6);
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetPowerUsage(void* dev, unsigned int* mw) {
  double v[5];
  if (!gpu_line((unsigned int)(unsigned long)dev - 1, v) || v[3] < 0) return 3; // NOT_SUPPORTED
  *mw = (unsigned int)(v[3] * 1000.0);
  return 0;
}

}  // extern "C"
