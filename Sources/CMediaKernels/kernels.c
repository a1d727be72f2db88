#include "moments_kernels.h"

static inline float clamp01(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
static inline int clamp10(int x) { return x < 0 ? 0 : (x > 1023 ? 1023 : x); }

void moments_tonemap_420p10_to_420p(const uint16_t *y, ptrdiff_t y_stride,
                                    const uint16_t *u, const uint16_t *v, ptrdiff_t c_stride,
                                    uint8_t *out_y, ptrdiff_t out_y_stride,
                                    uint8_t *out_u, uint8_t *out_v, ptrdiff_t out_c_stride,
                                    int width, int height, int halve, const moments_tone_tables *t) {
    const float steps = (float)(MOMENTS_TONE_STEPS - 1);
    const float gain_scale = (float)(MOMENTS_GAIN_STEPS - 1) / t->gain_max;
    const float gain_last = t->gain[MOMENTS_GAIN_STEPS - 1] * t->gain_max;
    for (int cy = 0; cy < height / 2; cy++) {
        uint8_t *our = out_u + cy * out_c_stride, *ovr = out_v + cy * out_c_stride;
        for (int cx = 0; cx < width / 2; cx++) {
            int luma[4], cu, cv;
            if (halve) {
                const uint16_t *u0 = u + (2 * cy) * c_stride + 2 * cx, *v0 = v + (2 * cy) * c_stride + 2 * cx;
                cu = (u0[0] + u0[1] + u0[c_stride] + u0[c_stride + 1] + 2) >> 2;
                cv = (v0[0] + v0[1] + v0[c_stride] + v0[c_stride + 1] + 2) >> 2;
                for (int k = 0; k < 4; k++) {
                    const uint16_t *s = y + (4 * cy + 2 * (k >> 1)) * y_stride + 4 * cx + 2 * (k & 1);
                    luma[k] = (s[0] + s[1] + s[y_stride] + s[y_stride + 1] + 2) >> 2;
                }
            } else {
                cu = u[cy * c_stride + cx];
                cv = v[cy * c_stride + cx];
                for (int k = 0; k < 4; k++) luma[k] = y[(2 * cy + (k >> 1)) * y_stride + 2 * cx + (k & 1)];
            }
            const int mean = (luma[0] + luma[1] + luma[2] + luma[3] + 2) >> 2;
            // The block's colour: BT.2020 non-constant luminance, 10-bit limited range, to linear light.
            const float yl = ((float)mean - 64.0f) / 876.0f;
            const float cb = ((float)cu - 512.0f) / 896.0f, cr = ((float)cv - 512.0f) / 896.0f;
            const float r = t->linear[(int)(clamp01(yl + 1.4746f * cr) * steps)];
            const float g = t->linear[(int)(clamp01(yl - 0.16455f * cb - 0.57135f * cr) * steps)];
            const float b = t->linear[(int)(clamp01(yl + 1.8814f * cb) * steps)];
            const float l = 0.2627f * r + 0.6780f * g + 0.0593f * b;
            const float gain = l < t->gain_max ? t->gain[(int)(l * gain_scale)] : gain_last / l;
            // BT.2020 -> BT.709 primaries in linear light, then 8-bit non-linear codes.
            const float r7 = t->gamma[(int)(clamp01((1.6605f * r - 0.5876f * g - 0.0728f * b) * gain) * steps)];
            const float g7 = t->gamma[(int)(clamp01((-0.1246f * r + 1.1329f * g - 0.0083f * b) * gain) * steps)];
            const float b7 = t->gamma[(int)(clamp01((-0.0182f * r - 0.1006f * g + 1.1187f * b) * gain) * steps)];
            // BT.709 limited range: the block's luma, and the detail of each sample around it.
            const float block = 16.0f + (0.2126f * r7 + 0.7152f * g7 + 0.0722f * b7) * (219.0f / 255.0f);
            const float base = t->grey[clamp10(mean)];
            for (int k = 0; k < 4; k++) {
                float value = block + t->grey[clamp10(luma[k])] - base + 0.5f;
                value = value < 16.0f ? 16.0f : (value > 235.5f ? 235.5f : value);
                out_y[(2 * cy + (k >> 1)) * out_y_stride + 2 * cx + (k & 1)] = (uint8_t)value;
            }
            our[cx] = (uint8_t)(128.5f + (-0.114572f * r7 - 0.385428f * g7 + 0.5f * b7) * (224.0f / 255.0f));
            ovr[cx] = (uint8_t)(128.5f + (0.5f * r7 - 0.454153f * g7 - 0.045847f * b7) * (224.0f / 255.0f));
        }
    }
}
