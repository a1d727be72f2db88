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
    /// 1: the child's program must not start without Landlock (exit 125 where the kernel has none).
    int require_landlock;
} moments_child_limits;

/// Filesystem confinement (Landlock, when the kernel has it): besides the few system files a
/// program needs to start (the loader's cache, the time zone, /proc, the CPU and memory layout and
/// CPU quota in /sys) and the harmless devices, the child may read (and execute) `readable` and read, create,
/// write and remove under `writable`; nothing else. TCP bind and connect are denied too (ABI 4+).
///
/// `view_root` (NULL: none; needs CAP_SYS_ADMIN): the folder (the storage) the child sees only
/// its own paths of. In a mount namespace of its own, an empty tmpfs (mode 0755) is put over it
/// and each of `readable` and `writable` beneath it is bound back at its own path (`readable`
/// read-only): the child's user reaches them whatever the folder's mode (0700), and nothing else
/// of the storage (the database, other jobs, other uploads) exists for it.
///
/// A child with a user of its own (`limits.uid`) always gets a mount namespace of its own with a
/// procfs of its own (hidepid=invisible, subset=pid): it sees its own process and nothing else of
/// /proc (not the server's, not another child's, not /proc/net or /proc/sys).
typedef struct {
    const char *const *readable;
    int readable_count;
    const char *const *writable;
    int writable_count;
    const char *view_root;
} moments_child_paths;

/// The Landlock ABI version the kernel offers (0: none; the child then runs unconfined).
int moments_landlock_abi(void);

/// Forks and execs `path` with `argv`/`envp`. In the child, before exec: stdin/stdout/stderr become
/// `stdin_fd`/`stdout_fd`/`stderr_fd`, every other descriptor is closed, no core dumps
/// (RLIMIT_CORE 0, PR_SET_DUMPABLE 0 is left to exec), the limits are applied, the child gets its
/// own process group (and the cgroup of `limits.cgroup_procs_fd`), it runs as `limits.uid`, it is
/// sent SIGKILL if the parent thread that started it dies, it sees only its own paths of the
/// storage (`paths.view_root`), it is confined to `paths` (no new privileges, no signals or
/// abstract sockets out of its Landlock domain where the kernel scopes them), and its outer
/// system-call filter is in place (`moments_outer_filter`): all before the first instruction of
/// its program, and inherited by anything it execs. A layer that cannot be set up makes the child
/// exit before exec: 120 its resource limits, 121 the filter, 122 the storage view, 123 the user, 124 the cgroup, 125 Landlock.
/// Returns the child's pid, or -errno.
pid_t moments_spawn_child(const char *path, char *const argv[], char *const envp[],
                          int stdin_fd, int stdout_fd, int stderr_fd, moments_child_limits limits,
                          moments_child_paths paths);

/// The outer system-call filter, installed before exec (by `moments_spawn_child`) for the child's
/// whole life: no sockets of any family (the child has only the pipes it was given), no tracing or
/// memory access of other processes, and scheduling, priority, I/O priority, CPU affinity, resource
/// limits and signals of this process only (`self`, or 0). execve stays allowed (the program must
/// start); the inner filter (`moments_enter_sandbox`) closes it. 0, or -errno.
int moments_outer_filter(pid_t self);

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

/// Gives the folder `path` and everything beneath it (folders and files, never
/// following symbolic links) to `uid`/`gid`. With `private_modes`, folders become 0700 and files
/// 0600 (taking a folder back from a child). 0, or -errno when the folder itself could not be changed.
int moments_hand_over(const char *path, int uid, int gid, int private_modes);

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
/// 1 when glibc gave this malloc'd buffer a mapping of its own (freeing it unmaps it), else 0.
int moments_is_mapped_allocation(const void *pointer);

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
/// Opens `path` for reading and reads a byte: 0, or -errno.
int moments_probe_read(const char *path);
/// setpriority(PRIO_PROCESS, pid, 19), then sched_setscheduler(pid, SCHED_IDLE), then
/// sched_setaffinity(pid, CPU 0), then ioprio_set(IOPRIO_WHO_PROCESS, pid, idle): the count that
/// worked (0: all refused).
int moments_probe_reschedule(pid_t pid);
/// Starts threads until one fails or `most` run (they wait, then end): how many started.
int moments_probe_threads(int most);
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
