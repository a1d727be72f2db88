// Installs FFmpeg's log callback. The va_list is formatted here in C (Swift cannot receive one in a
// C callback) and the finished line is handed to a Swift sink.
#ifndef MOMENTS_LOG_H
#define MOMENTS_LOG_H

typedef void (*moments_log_sink)(void *context, int level, const char *line);

/// Routes every FFmpeg log line at `max_level` or more severe to `sink`, and nothing to stderr.
void moments_log_install(moments_log_sink sink, int max_level);

#endif
