#define _GNU_SOURCE
#include "moments_faces.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/// `int *facedetect_cnn(unsigned char *result, unsigned char *bgr, int width, int height, int step)`,
/// a C++ function: looked up by its Itanium-mangled name.
typedef int *(*detect_fn)(unsigned char *, unsigned char *, int, int, int);

static detect_fn detect;
static void (*set_threads)(int);
static void (*set_global_threads)(int);
static int outcome = 1;  /// 1: not tried yet; 0: loaded; -1: failed
static char failure[256];

int moments_faces_load(const char *path, char *error, size_t error_size) {
    if (outcome == 1) {
        outcome = -1;
        if (!__builtin_cpu_supports("avx2")) {
            snprintf(failure, sizeof failure, "the processor lacks AVX2, which the face detector needs");
        } else {
            void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (!handle) {
                snprintf(failure, sizeof failure, "%s", dlerror());
            } else {
                detect = (detect_fn)dlsym(handle, "_Z14facedetect_cnnPhS_iii");
                // The library parallelises with OpenMP: one thread (the analysis decides its own
                // threads, and idle OpenMP workers spin: +4x the CPU of a detection). The thread
                // count is per calling thread, so it is set before each detection, on the wheel's
                // OpenMP runtime and on the process's own when one is already loaded (FFmpeg's
                // dependencies bring Debian's libgomp, and then the library's parallel regions
                // bind to that one, not to the copy beside it).
                set_threads = (void (*)(int))dlsym(handle, "omp_set_num_threads");
                set_global_threads = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
                if (detect && set_threads) {
                    outcome = 0;
                } else {
                    snprintf(failure, sizeof failure, "no facedetect_cnn or omp_set_num_threads in %s", path);
                    dlclose(handle);
                }
            }
        }
    }
    if (outcome != 0 && error && error_size) snprintf(error, error_size, "%s", failure);
    return outcome;
}

int moments_faces_detect(
    const uint8_t *bgr, int width, int height, int stride, uint8_t *workspace, moments_face *out, int capacity) {
    if (outcome != 0 || !detect) return -1;
    set_threads(1);
    if (set_global_threads) set_global_threads(1);
    int *result = detect(workspace, (unsigned char *)bgr, width, height, stride);
    if (!result) return 0;
    int count = result[0] < 0 ? 0 : result[0];
    // Each face: 16 shorts after the count (score, x, y, width, height, five landmark points).
    int fits = (MOMENTS_FACE_WORKSPACE - (int)sizeof(int)) / (16 * (int)sizeof(short));
    if (count > fits) count = fits;
    int written = 0;
    for (int i = 0; i < count && written < capacity; i++) {
        const short *p = (const short *)(result + 1) + 16 * i;
        moments_face *f = &out[written++];
        f->score = p[0];
        f->x = p[1]; f->y = p[2]; f->width = p[3]; f->height = p[4];
        for (int k = 0; k < 10; k++) f->landmarks[k] = p[5 + k];
    }
    return written;
}
