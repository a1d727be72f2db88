#define _GNU_SOURCE
#include "moments_isolation.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
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

pid_t moments_spawn_child(const char *path, char *const argv[], char *const envp[],
                          int stdin_fd, int stdout_fd, int stderr_fd, moments_child_limits limits) {
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
