#define _GNU_SOURCE
#include "moments_isolation.h"

#include <errno.h>
#include <dirent.h>
#include <grp.h>
#include <malloc.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stdint.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/// 0, or -1 when the limit could not be set (the child is then not started).
static int set_limit(int resource, unsigned long long value) {
    if (value == 0) return 0;
    struct rlimit limit = { (rlim_t)value, (rlim_t)value };
    if (resource == RLIMIT_CPU) limit.rlim_max = (rlim_t)value + 1; // SIGXCPU first, then SIGKILL
    return setrlimit(resource, &limit);
}

int moments_landlock_abi(void) {
#ifdef SYS_landlock_create_ruleset
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return abi > 0 ? (int)abi : 0;
#else
    return 0;
#endif
}

// Newer than Debian 12's headers (Linux 6.1), stable kernel ABI: defined here when missing.
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#define MOMENTS_NET_BIND_TCP (1ULL << 0)
#define MOMENTS_NET_CONNECT_TCP (1ULL << 1)

#define MOMENTS_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define MOMENTS_SCOPE_SIGNAL (1ULL << 1)

/// landlock_ruleset_attr as of ABI 6 (the kernel takes the first 8 or 16 bytes from older callers).
struct moments_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

#define FS_READ (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_WRITE (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE | \
                  LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG)
#define FS_SPECIAL (LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | \
                    LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)

/// Adds a rule for `dir` (skipped when it does not exist). Async-signal-safe.
static int allow(int ruleset, const char *dir, uint64_t access, uint64_t handled) {
    int fd = open(dir, O_PATH | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    // A rule on a file may only carry file rights.
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
        access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
    struct landlock_path_beneath_attr rule = { .allowed_access = access & handled, .parent_fd = fd };
    long rc = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    close(fd);
    return rc == 0 ? 0 : -1;
}

/// Confines the calling process to the system folders and `paths`. 0, or -1 on failure.
static int confine(int abi, const char *executable, moments_child_paths paths) {
    uint64_t handled = FS_READ | FS_WRITE | FS_SPECIAL;
    if (abi >= 2) handled |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) handled |= LANDLOCK_ACCESS_FS_TRUNCATE;
    struct moments_ruleset_attr attr = { .handled_access_fs = handled, .handled_access_net = 0, .scoped = 0 };
    size_t size = sizeof(attr);
    if (abi >= 6) {
        // No signals to, and no abstract Unix sockets of, any process outside the child's own domain.
        attr.handled_access_net = MOMENTS_NET_BIND_TCP | MOMENTS_NET_CONNECT_TCP;
        attr.scoped = MOMENTS_SCOPE_ABSTRACT_UNIX_SOCKET | MOMENTS_SCOPE_SIGNAL;
    } else if (abi >= 4) {
        attr.handled_access_net = MOMENTS_NET_BIND_TCP | MOMENTS_NET_CONNECT_TCP;
        size = offsetof(struct moments_ruleset_attr, scoped);
    } else {
        size = offsetof(struct moments_ruleset_attr, handled_access_net);
    }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (ruleset < 0) return -1;
    // Of the system only what a program needs to start: the loader's cache, the time zone, the
    // CPU and memory layout and CPU quota (the C library, the Swift runtime and FFmpeg count CPUs
    // and NUMA nodes), the kernel's overcommit mode and filesystem list, and its own processes in
    // /proc (/proc/self: its maps, status, executable, threads). Not /etc, /opt, /usr, /proc or /sys as a whole: the libraries it loads
    // come in `readable`.
    static const char *const system[] = { "/etc/ld.so.cache", "/etc/localtime", "/proc/filesystems",
                                          "/proc/sys/vm/overcommit_memory", "/sys/devices/system/cpu",
                                          "/sys/devices/system/node", "/sys/fs/cgroup/cpu.max",
                                          "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us",
                                          "/sys/fs/cgroup/cpuset/cpuset.cpus" };
    int failed = 0;
    for (size_t i = 0; i < sizeof(system) / sizeof(system[0]); i++) failed |= allow(ruleset, system[i], FS_READ, handled);
    // /proc: with a user of its own, the child's own procfs (see build_view), which shows its own
    // process only; without (a development machine, `isolation.allowWeaker` user), the host's:
    // the runtime reads its threads' /proc/<tid>/stat, which no rule made before exec can name.
    failed |= allow(ruleset, "/proc", FS_READ, handled);
    // Of /dev only the harmless devices: not /dev/shm (another process's shared memory), not the rest.
    static const char *const devices[] = { "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom" };
    for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++)
        failed |= allow(ruleset, devices[i], LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE, handled);
    failed |= allow(ruleset, executable, FS_READ, handled);
    for (int i = 0; i < paths.readable_count; i++) failed |= allow(ruleset, paths.readable[i], FS_READ, handled);
    uint64_t everything = FS_READ | FS_WRITE | LANDLOCK_ACCESS_FS_REFER | LANDLOCK_ACCESS_FS_TRUNCATE;
    for (int i = 0; i < paths.writable_count; i++) failed |= allow(ruleset, paths.writable[i], everything, handled);
    if (!failed && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && syscall(SYS_landlock_restrict_self, ruleset, 0) == 0) {
        close(ruleset);
        return 0;
    }
    close(ruleset);
    return -1;
}

/// Whether `path` lies strictly beneath `root` ("/a/b" beneath "/a"); the rest after the slash in `rest`.
static int beneath(const char *path, const char *root, const char **rest) {
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/') n--;
    if (strncmp(path, root, n) != 0 || path[n] != '/' || path[n + 1] == 0) return 0;
    *rest = path + n + 1;
    return 1;
}

/// Makes the folders of `path` below `root` (which is an empty tmpfs now), and the leaf itself: a
/// folder, or an empty file to bind a file onto. Async-signal-safe. 0 or -1.
static int make_mount_point(const char *path, const char *root, int is_dir) {
    char buffer[4096];
    size_t length = strlen(path);
    if (length >= sizeof(buffer)) return -1;
    memcpy(buffer, path, length + 1);
    size_t start = strlen(root);
    for (size_t i = start + 1; i < length; i++) {
        if (buffer[i] != '/') continue;
        buffer[i] = 0;
        if (mkdir(buffer, 0755) != 0 && errno != EEXIST) return -1;
        buffer[i] = '/';
    }
    if (is_dir) return mkdir(buffer, 0755) == 0 || errno == EEXIST ? 0 : -1;
    int fd = open(buffer, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

#define MOMENTS_VIEW_MOST 16

/// The child's mount namespace: its view of `paths.view_root` (see moments_child_paths) and a
/// /proc of its own. Async-signal-safe. 0 or -1.
static int build_view(moments_child_paths paths) {
    const char *root = paths.view_root;
    const char *targets[MOMENTS_VIEW_MOST];
    int fds[MOMENTS_VIEW_MOST], writable[MOMENTS_VIEW_MOST], dirs[MOMENTS_VIEW_MOST];
    int count = 0;
    if (unshare(CLONE_NEWNS) != 0) return -1;
    // Nothing mounted here reaches the server's namespace, and nothing of the server's reaches here.
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return -1;
    // Opened in the new namespace (a bind takes its source from the caller's own), before the
    // tmpfs hides them.
    for (int pass = 0; pass < 2; pass++) {
        const char *const *list = pass == 0 ? paths.writable : paths.readable;
        int n = pass == 0 ? paths.writable_count : paths.readable_count;
        for (int i = 0; i < n && root; i++) {
            const char *rest;
            if (!beneath(list[i], root, &rest)) continue;
            if (count == MOMENTS_VIEW_MOST) return -1;
            int fd = open(list[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0) return -1;
            struct stat st;
            if (fstat(fd, &st) != 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) { close(fd); return -1; }
            targets[count] = list[i];
            fds[count] = fd;
            writable[count] = pass == 0;
            dirs[count] = S_ISDIR(st.st_mode);
            count++;
        }
    }
    if (root && mount("moments-view", root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k,nr_inodes=512") != 0)
        return -1;
    for (int i = 0; i < count; i++) {
        if (make_mount_point(targets[i], root, dirs[i]) != 0) return -1;
        char source[32];
        memcpy(source, "/proc/self/fd/", 14);
        char digits[12];
        int n = 0;
        unsigned int v = (unsigned int)fds[i];
        do { digits[n++] = (char)('0' + v % 10); v /= 10; } while (v && n < 11);
        int at = 14;
        while (n) source[at++] = digits[--n];
        source[at] = 0;
        if (mount(source, targets[i], NULL, MS_BIND, NULL) != 0) return -1;
        unsigned long flags = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | (writable[i] ? 0 : MS_RDONLY);
        if (mount(NULL, targets[i], NULL, flags, NULL) != 0) return -1;
        close(fds[i]);
    }
    // A /proc of its own: only processes of its user (itself: the user is its alone) and no
    // system files (subset=pid: no /proc/net, /proc/sys…). Landlock then allows all of it: the
    // runtime reads its threads' /proc/<tid>/stat, which no rule made before exec could name.
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible,subset=pid") != 0) return -1;
    return 0;
}

pid_t moments_spawn_child(const char *path, char *const argv[], char *const envp[],
                          int stdin_fd, int stdout_fd, int stderr_fd, moments_child_limits limits,
                          moments_child_paths paths) {
    int abi = moments_landlock_abi();
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return -errno;
    if (pid > 0) return pid;

    // Child: only async-signal-safe calls from here to exec.
    if (limits.cgroup_procs_fd >= 0) {
        // Into the job's own cgroup first: whatever it starts later (even a new session) stays there.
        if (write(limits.cgroup_procs_fd, "0\n", 2) != 2) _exit(124);
    }
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    if (dup2(stdin_fd, 0) < 0 || dup2(stdout_fd, 1) < 0 || dup2(stderr_fd, 2) < 0) _exit(126);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
#endif
    {
        long max = sysconf(_SC_OPEN_MAX);
        for (long fd = 3; fd < (max > 0 ? max : 65536); fd++) close((int)fd);
    }
    struct rlimit nocore = { 0, 0 };
    if (setrlimit(RLIMIT_CORE, &nocore) != 0 || set_limit(RLIMIT_AS, limits.address_space_bytes) != 0 ||
        set_limit(RLIMIT_CPU, limits.cpu_seconds) != 0 || set_limit(RLIMIT_NOFILE, limits.open_files) != 0 ||
        set_limit(RLIMIT_FSIZE, limits.file_size_bytes) != 0 || set_limit(RLIMIT_NPROC, limits.processes) != 0)
        _exit(120);
    if (limits.niceness > 0) setpriority(PRIO_PROCESS, 0, limits.niceness);
    // Its mount namespace first (its own /proc, its view of the storage): mounting needs the
    // privileges the change of user drops.
    if (limits.uid >= 0 && build_view(paths) != 0) _exit(122);
    if (limits.uid >= 0) {
        // An unprivileged user of its own: no capability, no access to the server's processes, to
        // another child's or to root's files.
        gid_t gid = (gid_t)(limits.gid >= 0 ? limits.gid : limits.uid);
        if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 || setresuid((uid_t)limits.uid, (uid_t)limits.uid, (uid_t)limits.uid) != 0)
            _exit(123);
        if (getuid() != (uid_t)limits.uid || geteuid() != (uid_t)limits.uid) _exit(123);
    }
    // After the change of user (which clears it): the child dies with the thread that started it.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) _exit(126);
    if (getppid() != parent) _exit(126); // the parent died before the line above
    if (abi > 0 ? confine(abi, path, paths) != 0 : limits.require_landlock) _exit(125);
    if (moments_outer_filter(getpid()) != 0) _exit(121);
    execve(path, argv, envp);
    _exit(127);
}

int moments_pipe(int fds[2]) {
    return pipe2(fds, O_CLOEXEC) == 0 ? 0 : -errno;
}

int moments_kill_group(pid_t pid, int signal) {
    if (pid <= 0) return -EINVAL;
    if (kill(-pid, signal) == 0) return 0;
    return kill(pid, signal) == 0 ? 0 : -errno;
}

pid_t moments_wait(pid_t pid, int *status, int nohang) {
    for (;;) {
        pid_t r = waitpid(pid, status, nohang ? WNOHANG : 0);
        if (r >= 0) return r;
        if (errno != EINTR) return -errno;
    }
}

int moments_exited(int status) { return WIFEXITED(status); }
int moments_exit_code(int status) { return WEXITSTATUS(status); }
int moments_signaled(int status) { return WIFSIGNALED(status); }
int moments_term_signal(int status) { return WTERMSIG(status); }

long moments_children_max_rss_kib(void) {
    struct rusage usage;
    if (getrusage(RUSAGE_CHILDREN, &usage) != 0) return -1;
    return usage.ru_maxrss;
}

// MARK: - The child's system-call filter

#if defined(__x86_64__)
#define MOMENTS_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define MOMENTS_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#define ARG_LO(n) (offsetof(struct seccomp_data, args) + 8 * (n))
#define ARG_HI(n) (offsetof(struct seccomp_data, args) + 8 * (n) + 4)
#define RET_ERRNO(e) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))
#define RET_ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/// System calls a media child never needs: they fail with EPERM (the program sees an ordinary error).
static const int denied[] = {
    // Networking: the child talks to its parent over the pipes it was given, nothing else.
#ifdef __NR_socket
    __NR_socket, __NR_socketpair, __NR_connect, __NR_bind, __NR_listen, __NR_accept, __NR_accept4,
    __NR_sendto, __NR_sendmsg, __NR_sendmmsg, __NR_recvfrom, __NR_recvmsg, __NR_recvmmsg,
#endif
    // New programs and processes (threads are made with clone, checked apart).
    __NR_execve, __NR_execveat,
#ifdef __NR_fork
    __NR_fork,
#endif
#ifdef __NR_vfork
    __NR_vfork,
#endif
    // Other processes: signals (kill and tgkill are checked apart), tracing, their memory.
    __NR_tkill, __NR_ptrace, __NR_process_vm_readv, __NR_process_vm_writev, __NR_kcmp,
#ifdef __NR_pidfd_open
    __NR_pidfd_open, __NR_pidfd_send_signal, __NR_pidfd_getfd,
#endif
#ifdef __NR_process_madvise
    __NR_process_madvise,
#endif
    // Namespaces, mounts, kernel interfaces no decoder uses.
    __NR_unshare, __NR_setns, __NR_mount, __NR_umount2, __NR_pivot_root, __NR_chroot,
#ifdef __NR_open_tree
    __NR_open_tree, __NR_move_mount, __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick,
#endif
#ifdef __NR_mount_setattr
    __NR_mount_setattr,
#endif
    __NR_bpf, __NR_perf_event_open, __NR_userfaultfd, __NR_keyctl, __NR_add_key, __NR_request_key,
#ifdef __NR_io_uring_setup
    __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
#endif
    __NR_kexec_load, __NR_init_module, __NR_finit_module, __NR_delete_module, __NR_reboot,
    __NR_swapon, __NR_swapoff, __NR_acct, __NR_syslog, __NR_quotactl,
    __NR_name_to_handle_at, __NR_open_by_handle_at,
#ifdef __NR_kexec_file_load
    __NR_kexec_file_load,
#endif
#ifdef __NR_ioperm
    __NR_ioperm, __NR_iopl,
#endif
    // Links (a path into somebody else's files) and special files.
#ifdef __NR_symlink
    __NR_symlink, __NR_link, __NR_mknod,
#endif
    __NR_symlinkat, __NR_linkat, __NR_mknodat,
    // System V and POSIX message queues and shared memory: channels to other processes.
    __NR_shmget, __NR_shmat, __NR_shmctl, __NR_msgget, __NR_msgsnd, __NR_msgrcv, __NR_msgctl,
    __NR_semget, __NR_semop, __NR_semctl, __NR_semtimedop,
    __NR_mq_open, __NR_mq_unlink, __NR_mq_timedsend, __NR_mq_timedreceive, __NR_mq_notify, __NR_mq_getsetattr,
};

#ifdef MOMENTS_AUDIT_ARCH
/// The start of both filters: another ABI (i386, the x32 entry or x32 numbers) is killed; then
/// the system call's number is loaded.
static size_t prologue(struct sock_filter *f, size_t n) {
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MOMENTS_AUDIT_ARCH, 1, 0);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif
    return n;
}
#endif

/// Appends "each of `calls`: EPERM".
static size_t deny_all(struct sock_filter *f, size_t n, const int *calls, size_t count) {
    for (size_t i = 0; i < count; i++) {
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)calls[i], 0, 1);
        f[n++] = (struct sock_filter)RET_ERRNO(EPERM);
    }
    return n;
}

/// Appends "nr: allowed only when argument 0 is this process (or 0 when `zero_too`), else EPERM".
static size_t only_self(struct sock_filter *f, size_t n, int nr, pid_t self, int zero_too) {
    struct sock_filter part[] = {
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 7),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, zero_too ? 1 : 0, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)self, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(0)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
        RET_ALLOW,
        RET_ERRNO(EPERM),
    };
    // Without `zero_too` the second test is a no-op (both branches lead to the next one).
    memcpy(f + n, part, sizeof(part));
    return n + sizeof(part) / sizeof(part[0]);
}

/// Appends "nr: allowed only when argument `arg` is this process or 0, else EPERM".
static size_t self_or_zero(struct sock_filter *f, size_t n, int nr, pid_t self, int arg) {
    struct sock_filter part[] = {
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 7),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(arg)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)self, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(arg)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
        RET_ALLOW,
        RET_ERRNO(EPERM),
    };
    memcpy(f + n, part, sizeof(part));
    return n + sizeof(part) / sizeof(part[0]);
}

/// Denied by the outer filter, whatever the program.
static const int outer_denied[] = {
#ifdef __NR_socket
    __NR_socket, __NR_socketpair, __NR_connect, __NR_bind, __NR_listen, __NR_accept, __NR_accept4,
#endif
    __NR_ptrace, __NR_process_vm_readv, __NR_process_vm_writev, __NR_kcmp,
#ifdef __NR_pidfd_getfd
    __NR_pidfd_getfd,
#endif
#ifdef __NR_process_madvise
    __NR_process_madvise,
#endif
};

int moments_outer_filter(pid_t self) {
#ifndef MOMENTS_AUDIT_ARCH
    (void)self;
    return -ENOSYS;
#else
    struct sock_filter f[160];
    size_t n = 0;
    n = prologue(f, n);
    n = deny_all(f, n, outer_denied, sizeof(outer_denied) / sizeof(outer_denied[0]));
    // Other processes' scheduling: setpriority(which, who), ioprio_set(which, who) name it in the
    // second argument, the sched_* calls in the first. PRIO_USER/PRIO_PGRP with 0 mean this
    // child's own user (its own) and group.
    n = self_or_zero(f, n, __NR_setpriority, self, 1);
    n = self_or_zero(f, n, __NR_ioprio_set, self, 1);
    n = self_or_zero(f, n, __NR_sched_setscheduler, self, 0);
    n = self_or_zero(f, n, __NR_sched_setparam, self, 0);
    n = self_or_zero(f, n, __NR_sched_setaffinity, self, 0);
#ifdef __NR_sched_setattr
    n = self_or_zero(f, n, __NR_sched_setattr, self, 0);
#endif
    n = self_or_zero(f, n, __NR_prlimit64, self, 0);
    n = only_self(f, n, __NR_kill, self, 0);
    n = only_self(f, n, __NR_tgkill, self, 0);
    n = only_self(f, n, __NR_rt_sigqueueinfo, self, 0);
    n = only_self(f, n, __NR_rt_tgsigqueueinfo, self, 0);
#ifdef __NR_pidfd_send_signal
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pidfd_send_signal, 0, 1);
    f[n++] = (struct sock_filter)RET_ERRNO(EPERM);
#endif
    f[n++] = (struct sock_filter)RET_ALLOW;
    if (n > sizeof(f) / sizeof(f[0])) return -E2BIG;
    struct sock_fprog program = { .len = (unsigned short)n, .filter = f };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -errno;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) return -errno;
    return 0;
#endif
}

int moments_drop_capabilities(void) {
    // A child that kept root (where `nobody` cannot reach the executable) would otherwise still
    // hold CAP_SYS_PTRACE and CAP_DAC_OVERRIDE: it could read the undumpable server's
    // /proc/<pid>/environ (the credentials) and any file. Without capabilities, uid 0 is only an
    // owner like any other. The bounding set first (needs CAP_SETPCAP, still held), then the rest.
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) return -errno;
    for (int cap = 0; cap <= 63; cap++) {
        // Without CAP_SETPCAP (a server that is not root) the bounding set stays: it grants nothing
        // once the permitted set is empty and no_new_privs is set.
        if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EPERM) return -errno;
    }
    struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    if (syscall(SYS_capset, &header, data) != 0) return -errno;
    return 0;
}

int moments_effective_capabilities(unsigned long long *effective) {
    struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    if (syscall(SYS_capget, &header, data) != 0) return -errno;
    *effective = (unsigned long long)data[0].effective | ((unsigned long long)data[1].effective << 32);
    return 0;
}

int moments_enter_sandbox(void) {
#ifndef MOMENTS_AUDIT_ARCH
    return -ENOSYS;
#else
    pid_t self = getpid();
    struct sock_filter f[256];
    size_t n = 0;
    n = prologue(f, n);
    n = deny_all(f, n, denied, sizeof(denied) / sizeof(denied[0]));
    // clone3 cannot be inspected (its flags are in memory): "not implemented" makes the C library
    // fall back to clone, whose flags are checked: threads only (CLONE_THREAD), no processes.
#ifdef __NR_clone3
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1);
    f[n++] = (struct sock_filter)RET_ERRNO(ENOSYS);
#endif
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1);
    f[n++] = (struct sock_filter)RET_ALLOW;
    f[n++] = (struct sock_filter)RET_ERRNO(EPERM);
    // Signals to this process only; resource limits of this process only.
    n = only_self(f, n, __NR_kill, self, 0);
    n = only_self(f, n, __NR_tgkill, self, 0);
    n = only_self(f, n, __NR_rt_sigqueueinfo, self, 0);
    n = only_self(f, n, __NR_rt_tgsigqueueinfo, self, 0);
    n = only_self(f, n, __NR_prlimit64, self, 1);
    f[n++] = (struct sock_filter)RET_ALLOW;
    if (n > sizeof(f) / sizeof(f[0])) return -E2BIG;
    struct sock_fprog program = { .len = (unsigned short)n, .filter = f };
    (void)moments_drop_capabilities(); // a process without capabilities has none to drop; the probe reports what is left
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -errno;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) return -errno;
    return 0;
#endif
}

// MARK: - Files handed to the child's user

static void hand_over_at(int dir, int depth, uid_t uid, gid_t gid, int private_modes) {
    DIR *listing = fdopendir(dir);
    if (!listing) { close(dir); return; }
    struct dirent *entry;
    while ((entry = readdir(listing)) != NULL) {
        const char *name = entry->d_name;
        if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
        // Opened without following links; a FIFO or device is never opened (O_PATH), only files and folders changed.
        int fd = openat(dirfd(listing), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat st;
        if (fstat(fd, &st) != 0) { close(fd); continue; }
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(listing), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            struct stat again;
            if (sub >= 0 && fstat(sub, &again) == 0 && again.st_ino == st.st_ino && again.st_dev == st.st_dev) {
                if (again.st_uid != uid || again.st_gid != gid) fchown(sub, uid, gid);
                if (private_modes && (again.st_mode & 07777) != 0700) fchmod(sub, 0700);
                if (depth < 16) { hand_over_at(sub, depth + 1, uid, gid, private_modes); sub = -1; }
            }
            if (sub >= 0) close(sub);
        } else if (S_ISREG(st.st_mode) && (st.st_uid != uid || st.st_gid != gid)) {
            // A file with other names too (a re-cut's input, linked from the job it re-cuts) is
            // handed over and taken back with them: a child can link only what it sees, which is
            // its own folder (its view of the storage, Landlock, the kernel's protected_hardlinks).
            fchownat(fd, "", uid, gid, AT_EMPTY_PATH);
        }
        if (private_modes && S_ISREG(st.st_mode) && (st.st_mode & 07777) != 0600) {
            // O_PATH cannot fchmod: through the folder, without following a link.
            fchmodat(dirfd(listing), name, 0600, 0);
        }
        close(fd);
    }
    closedir(listing);
}

int moments_hand_over(const char *path, int uid, int gid, int private_modes) {
    int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0) return -errno;
    struct stat st;
    if (fstat(dir, &st) == 0 && (st.st_uid != (uid_t)uid || st.st_gid != (gid_t)gid) && fchown(dir, uid, gid) != 0) {
        int e = errno;
        close(dir);
        return -e;
    }
    if (private_modes && (st.st_mode & 07777) != 0700) fchmod(dir, 0700);
    hand_over_at(dir, 0, (uid_t)uid, (gid_t)gid, private_modes);
    return 0;
}

// MARK: - The server process

int moments_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, dumpable ? 1 : 0, 0, 0, 0) == 0 ? 0 : -errno;
}

int moments_is_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
}

int moments_map_large_allocations(size_t threshold) {
    // Setting the threshold turns off glibc's dynamic one, which after the first large free rises
    // to 32 MB and then serves frame-sized buffers from arenas that never shrink.
    return mallopt(M_MMAP_THRESHOLD, (int)threshold) == 1 ? 0 : -1;
}

int moments_is_mapped_allocation(const void *pointer) {
    // glibc keeps a chunk's size in the word before the pointer; bit 1 (IS_MMAPPED) says the chunk
    // has a mapping of its own. Asked of one buffer, so other threads' allocations cannot change
    // the answer (mallinfo2's process-wide total can).
    if (pointer == NULL) return 0;
    const size_t *header = (const size_t *)pointer - 1;
    return (*header & 0x2) != 0;
}

// MARK: - The job's cgroup

int moments_open_write(const char *path) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

int moments_write_text(int fd, const char *text) {
    size_t length = strlen(text);
    ssize_t n = write(fd, text, length);
    return n == (ssize_t)length ? 0 : -errno;
}

int moments_has_exited(pid_t pid) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    for (;;) {
        if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0) return info.si_pid == pid ? 1 : 0;
        if (errno != EINTR) return -errno;
    }
}

// MARK: - Ways out, tried by the sandbox probe (tests only)

int moments_probe_ptrace(pid_t pid) {
    if (ptrace(PTRACE_ATTACH, pid, NULL, NULL) != 0) return -errno;
    ptrace(PTRACE_DETACH, pid, NULL, NULL);
    return 0;
}

int moments_probe_udp(unsigned short port) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    struct sockaddr_in to;
    memset(&to, 0, sizeof(to));
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ssize_t n = sendto(fd, "x", 1, 0, (struct sockaddr *)&to, sizeof(to));
    int e = errno;
    close(fd);
    return n == 1 ? 0 : -e;
}

int moments_probe_unix(const char *name, int abstract) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    struct sockaddr_un to;
    memset(&to, 0, sizeof(to));
    to.sun_family = AF_UNIX;
    size_t length = strlen(name);
    if (length + 2 > sizeof(to.sun_path)) { close(fd); return -ENAMETOOLONG; }
    memcpy(to.sun_path + (abstract ? 1 : 0), name, length);
    socklen_t size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length + (abstract ? 1 : 0));
    int rc = connect(fd, (struct sockaddr *)&to, size);
    int e = errno;
    close(fd);
    return rc == 0 ? 0 : -e;
}

pid_t moments_probe_setsid_grandchild(unsigned int seconds) {
    pid_t pid = fork();
    if (pid < 0) return -errno;
    if (pid == 0) {
        setsid();
        sleep(seconds); // holding standard output and error
        _exit(0);
    }
    return pid;
}

int moments_probe_forks(int most) {
    pid_t pids[4096];
    if (most > 4096) most = 4096;
    int made = 0;
    for (; made < most; made++) {
        pid_t pid = fork();
        if (pid < 0) break;
        if (pid == 0) { for (;;) pause(); }
        pids[made] = pid;
    }
    for (int i = 0; i < made; i++) { kill(pids[i], SIGKILL); waitpid(pids[i], NULL, 0); }
    return made;
}

int moments_probe_execve(void) {
    char *const argv[] = { (char *)"/nonexistent/moments-probe", NULL };
    char *const envp[] = { NULL };
    execve(argv[0], argv, envp);
    return -errno;
}

int moments_probe_read(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    char byte;
    ssize_t n = read(fd, &byte, 1);
    int e = errno;
    close(fd);
    return n >= 0 ? 0 : -e;
}

int moments_probe_reschedule(pid_t pid) {
    int worked = 0;
    if (setpriority(PRIO_PROCESS, (id_t)pid, 19) == 0) worked++;
    struct sched_param param = { .sched_priority = 0 };
    if (sched_setscheduler(pid, SCHED_IDLE, &param) == 0) worked++;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(pid, sizeof(one), &one) == 0) worked++;
    // IOPRIO_WHO_PROCESS (1), class IDLE (3) << 13.
    if (syscall(SYS_ioprio_set, 1, pid, 3 << 13) == 0) worked++;
    return worked;
}

static void *probe_thread_wait(void *arg) {
    (void)arg;
    sleep(2);
    return NULL;
}

int moments_probe_threads(int most) {
    static pthread_t threads[4096];
    if (most > 4096) most = 4096;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    int made = 0;
    for (; made < most; made++) {
        if (pthread_create(&threads[made], &attr, probe_thread_wait, NULL) != 0) break;
    }
    pthread_attr_destroy(&attr);
    for (int i = 0; i < made; i++) pthread_join(threads[i], NULL);
    return made;
}

unsigned long long moments_process_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NPROC, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
    return (unsigned long long)limit.rlim_cur;
}
