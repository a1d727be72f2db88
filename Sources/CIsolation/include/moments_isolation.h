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
    /// RLIMIT_NPROC (0: unchanged): processes and threads of the child's user.
    unsigned long long processes;
    /// The user and group the child runs as (-1: this process's). Needs root.
    int uid;
    int gid;
    /// An open `cgroup.procs` the child writes itself into first (-1: none).
    int cgroup_procs_fd;
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
/// own process group (and the cgroup of `limits.cgroup_procs_fd`), it runs as `limits.uid`, it is
/// sent SIGKILL if the parent thread that started it dies, and it is confined to `paths` (no new
/// privileges, no signals or abstract sockets out of its Landlock domain where the kernel scopes them). A confinement that cannot be set up where the kernel
/// offers Landlock makes the child exit with 125 before exec.
/// Returns the child's pid, or -errno.
pid_t moments_spawn_child(const char *path, char *const argv[], char *const envp[],
                          int stdin_fd, int stdout_fd, int stderr_fd, moments_child_limits limits,
                          moments_child_paths paths);

/// Installs the child's system-call filter (seccomp, with no new privileges): no sockets, no
/// execve, no processes (clone only with CLONE_THREAD), signals and prlimit to this process only,
/// no tracing, namespaces, mounts, links, System V or POSIX IPC. Irreversible; inherited by every
/// thread made afterwards. 0, or -errno (-ENOSYS: not on this architecture).
int moments_enter_sandbox(void);
/// Drops every capability (bounding, ambient, effective, permitted, inheritable); part of
/// `moments_enter_sandbox`. 0 or -errno.
int moments_drop_capabilities(void);
/// This process's effective capabilities as a bit set. 0 or -errno.
int moments_effective_capabilities(unsigned long long *effective);

/// Gives the folder `path` and everything beneath it (folders, and files with a single link; never
/// following symbolic links) to `uid`/`gid`. 0, or -errno when the folder itself could not be changed.
int moments_hand_over(const char *path, int uid, int gid);

/// prctl(PR_SET_DUMPABLE, dumpable): with 0, no core dumps, and /proc/<pid>/environ, mem, maps…
/// of this process are closed to processes of the same user without CAP_SYS_PTRACE. 0 or -errno.
int moments_set_dumpable(int dumpable);
/// prctl(PR_GET_DUMPABLE).
int moments_is_dumpable(void);

/// mallopt(M_MMAP_THRESHOLD, threshold): allocations of at least `threshold` bytes get pages of
/// their own, given back to the system when freed. A media process allocates picture buffers of
/// many sizes one pass after another (4K decode, then 1080p encode); without this glibc keeps the
/// freed buffers of one pass in its arenas while the next allocates anew, and the peak RSS is the
/// sum. 0, or -1 when glibc refused the value.
int moments_map_large_allocations(size_t threshold);
/// Bytes glibc holds in allocations mapped on their own (mallinfo2's hblkhd).
size_t moments_mapped_allocation_bytes(void);

/// open(path, O_WRONLY | O_CLOEXEC): the descriptor or -errno.
int moments_open_write(const char *path);
/// Writes the whole of `text` with one write(2). 0 or -errno.
int moments_write_text(int fd, const char *text);

/// pipe2(fds, O_CLOEXEC): neither end leaks into any other child. Returns 0 or -errno.
int moments_pipe(int fds[2]);

/// Sends `signal` to the child's whole process group (the child and anything it started).
int moments_kill_group(pid_t pid, int signal);

/// Whether the child has ended (1; not reaped: its pid stays ours), is running (0), or -errno.
int moments_has_exited(pid_t pid);

/// The sandbox probe's attempts (tests only: `moments job-exec --sandbox-probe`). Each returns 0
/// when the attempt worked, or -errno; the fork ones a pid or count.
int moments_probe_ptrace(pid_t pid);
int moments_probe_udp(unsigned short port);
int moments_probe_unix(const char *name, int abstract);
pid_t moments_probe_setsid_grandchild(unsigned int seconds);
int moments_probe_forks(int most);
int moments_probe_execve(void);
/// The soft RLIMIT_NPROC of this process (0: unlimited).
unsigned long long moments_process_limit(void);

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
