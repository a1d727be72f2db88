#ifndef MOMENTS_FILE_SYNC_H
#define MOMENTS_FILE_SYNC_H

#include <stdint.h>

/// Starts write-back of a file range to the disk without waiting for it (Linux sync_file_range
/// with SYNC_FILE_RANGE_WRITE; elsewhere nothing). Returns 0, or -1 with errno set.
int moments_start_writeback(int fd, int64_t offset, int64_t count);

#endif
