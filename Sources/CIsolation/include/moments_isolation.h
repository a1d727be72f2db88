// Starting an untrusted-media child process: fork, limits and plumbing applied before exec, so the
// child never runs a single instruction of the new program without them.
#ifndef MOMENTS_ISOLATION_H
#define MOMENTS_ISOLATION_H

#include <sys/types.h>

typedef struct {
    /// RLIMIT_AS in bytes (0: unchanged).
    unsigned long long address_space_bytes;
    /// RLIMIT_CPU in seconds (0: unchanged). SIGXCPU at the soft limit, SIGKILL one second later.
    unsigned long long cpu_seconds;
    /// RLIMIT_NOFILE (0: unchanged).
    unsigned long long open_files;
    /// RLIMIT_FSIZE in bytes (0: unchanged): largest file the child may write.
    unsigned long long file_size_bytes;
    /// Scheduling niceness of the child (0: unchanged).
    int niceness;
} moments_child_limits;

/// Filesystem confinement (Landlock, when the kernel has it): besides the system folders (read and
/// execute) and /dev (read and write), the child may read `readable` and read, create, write and
/// remove under `writable`; nothing else. TCP bind and connect are denied too (ABI 4+).
typedef struct {
    const char *const *readable;
    int readable_count;
    const char *const *writable;
    int writable_count;
} moments_child_paths;

/// The Landlock ABI version the kernel offers (0: none; the child then runs unconfined).
int moments_landlock_abi(void);

/// Forks and execs `path` with `argv`/`envp`. In the child, before exec: stdin/stdout/stderr become
/// `stdin_fd`/`stdout_fd`/`stderr_fd`, every other descriptor is closed, no core dumps
/// (RLIMIT_CORE 0, PR_SET_DUMPABLE 0 is left to exec), the limits are applied, the child gets its
/// own process group, it is sent SIGKILL if the parent thread that started it dies, and it is
/// confined to `paths` (no new privileges). A confinement that cannot be set up where the kernel
/// offers Landlock makes the child exit with 125 before exec.
/// Returns the child's pid, or -errno.
pid_t moments_spawn_child(const char *path, char *const argv[], char *const envp[],
                          int stdin_fd, int stdout_fd, int stderr_fd, moments_child_limits limits,
                          moments_child_paths paths);

/// pipe2(fds, O_CLOEXEC): neither end leaks into any other child. Returns 0 or -errno.
int moments_pipe(int fds[2]);

/// Sends `signal` to the child's whole process group (the child and anything it started).
int moments_kill_group(pid_t pid, int signal);

/// waitpid without EINTR; fills `status` with the raw wait status. Returns pid, 0 (WNOHANG and still
/// running) or -errno.
pid_t moments_wait(pid_t pid, int *status, int nohang);

int moments_exited(int status);
int moments_exit_code(int status);
int moments_signaled(int status);
int moments_term_signal(int status);

/// Peak resident memory of waited-for children in KiB (getrusage RUSAGE_CHILDREN).
long moments_children_max_rss_kib(void);

#endif
