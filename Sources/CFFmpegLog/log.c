#include "moments_log.h"
#include <stdarg.h>
#include <stdio.h>
#include <libavutil/log.h>

static moments_log_sink installed_sink;
static int installed_level = AV_LOG_WARNING;

static void moments_log_callback(void *context, int level, const char *fmt, va_list args) {
    if (level > installed_level || installed_sink == NULL || fmt == NULL) return;
    char line[1024];
    vsnprintf(line, sizeof line, fmt, args);
    installed_sink(context, level, line);
}

void moments_log_install(moments_log_sink sink, int max_level) {
    installed_sink = sink;
    installed_level = max_level;
    av_log_set_level(max_level);
    av_log_set_callback(moments_log_callback);
}
