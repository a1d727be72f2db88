#ifndef MOMENTS_KERNELS_H
#define MOMENTS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/// Lookup tables of an HDR -> SDR tone mapping (built once by the caller; see ToneMapper.swift).
typedef struct {
    /// MOMENTS_TONE_STEPS entries: a non-linear BT.2020 R', G' or B' value in 0...1 (index =
    /// value * (steps - 1)) -> linear light, 1.0 = reference white.
    const float *linear;
    /// MOMENTS_GAIN_STEPS entries over linear luminance 0...gain_max: tone curve(l) / l.
    const float *gain;
    float gain_max;
    /// MOMENTS_TONE_STEPS entries: linear BT.709 light 0...1 -> 8-bit non-linear code (full range).
    const uint8_t *gamma;
    /// 1024 entries: a 10-bit limited-range Y' code of a neutral grey -> its 8-bit limited-range
    /// output Y' (the same curve, for the detail within a 2x2 block).
    const float *grey;
} moments_tone_tables;

#define MOMENTS_TONE_STEPS 4096
#define MOMENTS_GAIN_STEPS 8192

/// Tone-maps a 10-bit BT.2020 limited-range yuv420p picture (HLG or PQ, as the tables say) to an
/// 8-bit BT.709 limited-range yuv420p picture `width` x `height` (even), the source being the same
/// size (`halve` 0) or exactly twice as wide and high (`halve` 1: each output sample is the mean
/// of a 2x2 source block, the scaling done in 10 bits on the way). The colour of each 2x2 output
/// block (one chroma sample in 4:2:0) goes through the full tone mapping in linear light; the
/// four luma samples keep their detail through the grey curve. Strides in elements.
void moments_tonemap_420p10_to_420p(const uint16_t *y, ptrdiff_t y_stride,
                                    const uint16_t *u, const uint16_t *v, ptrdiff_t c_stride,
                                    uint8_t *out_y, ptrdiff_t out_y_stride,
                                    uint8_t *out_u, uint8_t *out_v, ptrdiff_t out_c_stride,
                                    int width, int height, int halve, const moments_tone_tables *tables);

#endif
