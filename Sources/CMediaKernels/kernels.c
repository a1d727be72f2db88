#include "moments_kernels.h"
#include <string.h>

static inline float clamp01(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
static inline int clamp10(int x) { return x < 0 ? 0 : (x > 1023 ? 1023 : x); }

/// Blocks handled per pass: the passes' buffers stay on the stack and in L1.
#define CHUNK 256

// On x86-64 an AVX2 version is built beside the baseline one and chosen at load time (the table
// lookups become gathers); elsewhere the baseline alone.
#if defined(__x86_64__) && defined(__linux__)
#define MOMENTS_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MOMENTS_CLONES
#endif

// Three passes per run of blocks, so that each loop is simple enough to vectorise: the 2x2
// block's samples (integer), its colour through the full curve, then each sample's detail.
MOMENTS_CLONES
void moments_tonemap_420p10_to_420p(const uint16_t *y, ptrdiff_t y_stride,
                                    const uint16_t *u, const uint16_t *v, ptrdiff_t c_stride,
                                    uint8_t *out_y, ptrdiff_t out_y_stride,
                                    uint8_t *out_u, uint8_t *out_v, ptrdiff_t out_c_stride,
                                    int width, int height, int halve, const moments_tone_tables *t) {
    const float steps = (float)(MOMENTS_TONE_STEPS - 1);
    const float gain_scale = (float)(MOMENTS_GAIN_STEPS - 1) / t->gain_max;
    const float gain_last = t->gain[MOMENTS_GAIN_STEPS - 1] * t->gain_max;
    const int blocks = width / 2;
    const float *restrict linear = t->linear, *restrict gain_table = t->gain, *restrict grey = t->grey;
    const uint8_t *restrict gamma = t->gamma;
    const float gain_max = t->gain_max;
    int32_t luma[4][CHUNK], mean[CHUNK], cu[CHUNK], cv[CHUNK];
    float offset[CHUNK];
    uint8_t ou8[CHUNK], ov8[CHUNK], row0[2 * CHUNK], row1[2 * CHUNK];
    for (int cy = 0; cy < height / 2; cy++) {
        uint8_t *restrict our = out_u + cy * out_c_stride, *restrict ovr = out_v + cy * out_c_stride;
        uint8_t *restrict oy0 = out_y + (2 * cy) * out_y_stride, *restrict oy1 = oy0 + out_y_stride;
        for (int c0 = 0; c0 < blocks; c0 += CHUNK) {
            const int n = blocks - c0 < CHUNK ? blocks - c0 : CHUNK;
            // 1. The block's samples (integer, no lookups), clamped to 10 bits.
            if (halve) {
                const uint16_t *u0 = u + (2 * cy) * c_stride + 2 * c0, *v0 = v + (2 * cy) * c_stride + 2 * c0;
                const uint16_t *r0 = y + (4 * cy) * y_stride + 4 * c0, *r1 = r0 + y_stride, *r2 = r1 + y_stride, *r3 = r2 + y_stride;
                for (int i = 0; i < n; i++) {
                    cu[i] = (u0[2 * i] + u0[2 * i + 1] + u0[c_stride + 2 * i] + u0[c_stride + 2 * i + 1] + 2) >> 2;
                    cv[i] = (v0[2 * i] + v0[2 * i + 1] + v0[c_stride + 2 * i] + v0[c_stride + 2 * i + 1] + 2) >> 2;
                    luma[0][i] = (r0[4 * i] + r0[4 * i + 1] + r1[4 * i] + r1[4 * i + 1] + 2) >> 2;
                    luma[1][i] = (r0[4 * i + 2] + r0[4 * i + 3] + r1[4 * i + 2] + r1[4 * i + 3] + 2) >> 2;
                    luma[2][i] = (r2[4 * i] + r2[4 * i + 1] + r3[4 * i] + r3[4 * i + 1] + 2) >> 2;
                    luma[3][i] = (r2[4 * i + 2] + r2[4 * i + 3] + r3[4 * i + 2] + r3[4 * i + 3] + 2) >> 2;
                }
            } else {
                const uint16_t *r0 = y + (2 * cy) * y_stride + 2 * c0, *r1 = r0 + y_stride;
                for (int i = 0; i < n; i++) {
                    cu[i] = u[cy * c_stride + c0 + i];
                    cv[i] = v[cy * c_stride + c0 + i];
                    luma[0][i] = r0[2 * i]; luma[1][i] = r0[2 * i + 1];
                    luma[2][i] = r1[2 * i]; luma[3][i] = r1[2 * i + 1];
                }
            }
            for (int i = 0; i < n; i++) {
                int m = (luma[0][i] + luma[1][i] + luma[2][i] + luma[3][i] + 2) >> 2;
                mean[i] = m < 0 ? 0 : (m > 1023 ? 1023 : m);
                for (int k = 0; k < 4; k++) luma[k][i] = clamp10(luma[k][i]);
            }
            // 2. The block's colour through the full curve.
            for (int i = 0; i < n; i++) {
                const float yl = ((float)mean[i] - 64.0f) / 876.0f;
                const float cb = ((float)cu[i] - 512.0f) / 896.0f, cr = ((float)cv[i] - 512.0f) / 896.0f;
                const float r = linear[(int)(clamp01(yl + 1.4746f * cr) * steps)];
                const float g = linear[(int)(clamp01(yl - 0.16455f * cb - 0.57135f * cr) * steps)];
                const float b = linear[(int)(clamp01(yl + 1.8814f * cb) * steps)];
                const float l = 0.2627f * r + 0.6780f * g + 0.0593f * b;
                const float at = l * gain_scale;
                const float tabled = gain_table[(int)(at < (float)(MOMENTS_GAIN_STEPS - 1) ? at : (float)(MOMENTS_GAIN_STEPS - 1))];
                const float gain = l < gain_max ? tabled : gain_last / l;
                const float r7 = gamma[(int)(clamp01((1.6605f * r - 0.5876f * g - 0.0728f * b) * gain) * steps)];
                const float g7 = gamma[(int)(clamp01((-0.1246f * r + 1.1329f * g - 0.0083f * b) * gain) * steps)];
                const float b7 = gamma[(int)(clamp01((-0.0182f * r - 0.1006f * g + 1.1187f * b) * gain) * steps)];
                const float block = 16.0f + (0.2126f * r7 + 0.7152f * g7 + 0.0722f * b7) * (219.0f / 255.0f);
                offset[i] = block - grey[mean[i]] + 0.5f;
                ou8[i] = (uint8_t)(128.5f + (-0.114572f * r7 - 0.385428f * g7 + 0.5f * b7) * (224.0f / 255.0f));
                ov8[i] = (uint8_t)(128.5f + (0.5f * r7 - 0.454153f * g7 - 0.045847f * b7) * (224.0f / 255.0f));
            }
            // 3. Each sample's detail around its block's luma.
            for (int i = 0; i < n; i++) {
                float a = offset[i] + grey[luma[0][i]], b = offset[i] + grey[luma[1][i]];
                float c = offset[i] + grey[luma[2][i]], d = offset[i] + grey[luma[3][i]];
                a = a < 16.0f ? 16.0f : (a > 235.5f ? 235.5f : a);
                b = b < 16.0f ? 16.0f : (b > 235.5f ? 235.5f : b);
                c = c < 16.0f ? 16.0f : (c > 235.5f ? 235.5f : c);
                d = d < 16.0f ? 16.0f : (d > 235.5f ? 235.5f : d);
                row0[2 * i] = (uint8_t)a; row0[2 * i + 1] = (uint8_t)b;
                row1[2 * i] = (uint8_t)c; row1[2 * i + 1] = (uint8_t)d;
            }
            memcpy(our + c0, ou8, (size_t)n);
            memcpy(ovr + c0, ov8, (size_t)n);
            memcpy(oy0 + 2 * c0, row0, (size_t)(2 * n));
            memcpy(oy1 + 2 * c0, row1, (size_t)(2 * n));
        }
    }
}
