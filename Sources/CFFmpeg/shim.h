// The C surface of FFmpeg that MediaEngine uses, plus inline replacements for the macros Swift
// cannot import (function-like macros and casts such as AVERROR(e), AVERROR_EOF, AV_NOPTS_VALUE).
#ifndef MOMENTS_CFFMPEG_SHIM_H
#define MOMENTS_CFFMPEG_SHIM_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/mastering_display_metadata.h>
#include <libavutil/mathematics.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>

/// AVERROR(e): a POSIX errno as FFmpeg's negative error code.
static inline int moments_averror(int e) { return AVERROR(e); }
/// AVERROR(EAGAIN): "output not available in this state, send more input".
static inline int moments_averror_eagain(void) { return AVERROR(EAGAIN); }
/// AVERROR_EOF: end of stream.
static inline int moments_averror_eof(void) { return AVERROR_EOF; }
/// AVERROR_INVALIDDATA: invalid data found when processing input.
static inline int moments_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
/// AVERROR_EXIT: an interrupt callback asked FFmpeg to stop.
static inline int moments_averror_exit(void) { return AVERROR_EXIT; }
/// AVERROR_DECODER_NOT_FOUND.
static inline int moments_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
/// AV_NOPTS_VALUE: "no timestamp".
static inline int64_t moments_nopts_value(void) { return AV_NOPTS_VALUE; }
/// AV_TIME_BASE_Q: FFmpeg's internal microsecond time base.
static inline AVRational moments_time_base_q(void) { return AV_TIME_BASE_Q; }
/// AV_ERROR_MAX_STRING_SIZE.
static inline int moments_error_max_string_size(void) { return AV_ERROR_MAX_STRING_SIZE; }

/// Adds HDR10 static metadata to a stream as side data (the mastering display's BT.2020 primaries
/// and D65 white, its luminance range in cd/m², the content's MaxCLL and MaxFALL): what an MP4
/// carries in its mdcv and clli boxes. 0, or AVERROR(ENOMEM).
static inline int moments_stream_add_hdr10_metadata(AVStream *st, int max_nits, int min_nits_x10000, int max_cll, int max_fall) {
    AVMasteringDisplayMetadata *m = (AVMasteringDisplayMetadata *)av_stream_new_side_data(
        st, AV_PKT_DATA_MASTERING_DISPLAY_METADATA, sizeof(AVMasteringDisplayMetadata));
    if (!m) return AVERROR(ENOMEM);
    memset(m, 0, sizeof(*m));
    const int d = 50000;
    m->display_primaries[0][0] = (AVRational){34000, d}; m->display_primaries[0][1] = (AVRational){16000, d};
    m->display_primaries[1][0] = (AVRational){13250, d}; m->display_primaries[1][1] = (AVRational){34500, d};
    m->display_primaries[2][0] = (AVRational){7500, d};  m->display_primaries[2][1] = (AVRational){3000, d};
    m->white_point[0] = (AVRational){15635, d}; m->white_point[1] = (AVRational){16450, d};
    m->max_luminance = (AVRational){max_nits, 1};
    m->min_luminance = (AVRational){min_nits_x10000, 10000};
    m->has_primaries = 1;
    m->has_luminance = 1;
    AVContentLightMetadata *c = (AVContentLightMetadata *)av_stream_new_side_data(
        st, AV_PKT_DATA_CONTENT_LIGHT_LEVEL, sizeof(AVContentLightMetadata));
    if (!c) return AVERROR(ENOMEM);
    c->MaxCLL = (unsigned)max_cll;
    c->MaxFALL = (unsigned)max_fall;
    return 0;
}

#endif
