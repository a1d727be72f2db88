// The C surface of FFmpeg that MediaEngine uses, plus inline replacements for the macros Swift
// cannot import (function-like macros and casts such as AVERROR(e), AVERROR_EOF, AV_NOPTS_VALUE).
#ifndef MOMENTS_CFFMPEG_SHIM_H
#define MOMENTS_CFFMPEG_SHIM_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
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

#endif
