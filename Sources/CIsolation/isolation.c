#define _GNU_SOURCE
#include "moments_isolation.h"

#include <errno.h>
#include <linux/landlock.h>
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

static void set_limit(int resource, unsigned long long value) {
    if (value == 0) return;
    struct rlimit limit = { (rlim_t)value, (rlim_t)value };
    if (resource == RLIMIT_CPU) limit.rlim_max = (rlim_t)value + 1; // SIGXCPU first, then SIGKILL
    setrlimit(resource, &limit);
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

/// landlock_ruleset_attr as of ABI 4 (the kernel takes the first 8 bytes from older callers).
struct moments_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
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
    struct moments_ruleset_attr attr = { .handled_access_fs = handled, .handled_access_net = 0 };
    size_t size = sizeof(attr);
    if (abi >= 4) {
        attr.handled_access_net = MOMENTS_NET_BIND_TCP | MOMENTS_NET_CONNECT_TCP;
    } else {
        size = offsetof(struct moments_ruleset_attr, handled_access_net);
    }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (ruleset < 0) return -1;
    static const char *const system[] = { "/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys" };
    int failed = 0;
    for (size_t i = 0; i < sizeof(system) / sizeof(system[0]); i++) failed |= allow(ruleset, system[i], FS_READ, handled);
    failed |= allow(ruleset, "/dev", FS_READ | LANDLOCK_ACCESS_FS_WRITE_FILE, handled);
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

pid_t moments_spawn_child(const char *path, char *const argv[], char *const envp[],
                          int stdin_fd, int stdout_fd, int stderr_fd, moments_child_limits limits,
                          moments_child_paths paths) {
    int abi = moments_landlock_abi();
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return -errno;
    if (pid > 0) return pid;

    // Child: only async-signal-safe calls from here to exec.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) _exit(126);
    if (getppid() != parent) _exit(126); // the parent died before the line above
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
    setrlimit(RLIMIT_CORE, &nocore);
    set_limit(RLIMIT_AS, limits.address_space_bytes);
    set_limit(RLIMIT_CPU, limits.cpu_seconds);
    set_limit(RLIMIT_NOFILE, limits.open_files);
    set_limit(RLIMIT_FSIZE, limits.file_size_bytes);
    if (limits.niceness > 0) setpriority(PRIO_PROCESS, 0, limits.niceness);
    if (abi > 0 && confine(abi, path, paths) != 0) _exit(125);
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
