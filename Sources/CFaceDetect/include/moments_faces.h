#ifndef MOMENTS_FACES_H
#define MOMENTS_FACES_H

#include <stddef.h>
#include <stdint.h>

/// One face as libfacedetection (YuNet) reports it, in pixels of the picture it was given.
typedef struct {
    int score;          /// 0...100
    int x, y, width, height;
    int landmarks[10];  /// right eye, left eye, nose tip, right and left mouth corner (x, y)
} moments_face;

/// Bytes of scratch memory one detection needs (the library's result buffer).
#define MOMENTS_FACE_WORKSPACE 0x20000

/// Loads the detector from the shared library at `path` (dlopen, no link-time dependency) and
/// keeps it to one thread. Returns 0, or -1 with a reason in `error` (missing file, no AVX2,
/// missing symbol). Call once, before any detection; later calls return the first outcome.
int moments_faces_load(const char *path, char *error, size_t error_size);

/// Detects faces in a packed BGR picture. `workspace` holds MOMENTS_FACE_WORKSPACE bytes.
/// Writes at most `capacity` faces to `out` and returns how many, or -1 when not loaded.
int moments_faces_detect(
    const uint8_t *bgr, int width, int height, int stride, uint8_t *workspace, moments_face *out, int capacity);

#endif
