// SPDX-License-Identifier: GPL-2.0
/*
 * cgchurn: memcg stat churn plus rstat flushes.
 *
 *   cgchurn -g GROUPS -i ITER [-m KB] ROOT
 *
 * ROOT is a cgroup2 directory. Enables +memory and +cpu in
 * ROOT/cgroup.subtree_control where it can (a warning otherwise), creates
 * GROUPS child cgroups ROOT/cgchurn-<pid>-<i>, and forks one process per
 * group that moves itself into its group and then loops: mmap KB kilobytes
 * (default 256), write every page, munmap (memcg charges, uncharges and stat
 * updates on whatever CPU it runs on). Once every child is in its group, the
 * parent reads ROOT/memory.stat and ROOT/cpu.stat (those of them that exist)
 * whole, ITER times; then it kills the children, removes the groups, disables
 * the controllers it enabled and prints
 *   groups=<n> reads=<n> elapsed_ns=<n>
 * where reads is ITER and elapsed_ns times the read loop. Cleans up on
 * errors and on SIGINT/SIGTERM too.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

const char *prog = "cgchurn";

static volatile sig_atomic_t interrupted;

struct child_msg {
	int idx;
	int err;
};

static const char *const controllers[] = { "memory", "cpu" };
static int enabled[ARRAY_SIZE(controllers)];

static void usage(void)
{
	printf("usage: cgchurn -g GROUPS -i ITER [-m KB] ROOT\n"
	       "Create GROUPS cgroups under the cgroup2 directory ROOT, each with a process\n"
	       "that maps, touches and unmaps KB kilobytes (default 256) in a loop, read\n"
	       "ROOT/memory.stat and ROOT/cpu.stat ITER times, clean up and print\n"
	       "groups=<n> reads=<n> elapsed_ns=<n>.\n");
}

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* snprintf() into a PATH_MAX buffer; main() checks ROOT is short enough. */
static void __attribute__((format(printf, 2, 3))) mkpath(char *buf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, PATH_MAX, fmt, ap);
	va_end(ap);
}

/* Write s to path; 0 or an errno. */
static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return errno;
	if (write(fd, s, strlen(s)) < 0)
		err = errno;
	close(fd);
	return err;
}

/* Read fd whole from offset 0; bytes read, or -1 with errno set. */
static ssize_t read_whole(int fd, char *buf, size_t len)
{
	ssize_t total = 0;

	for (;;) {
		ssize_t n = pread(fd, buf, len, total);

		if (n < 0)
			return -1;
		if (n == 0)
			return total;
		total += n;
	}
}

/* Is controller name listed in the file at path (space-separated words)? */
static int listed(const char *path, const char *name)
{
	char buf[512], *tok, *save;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (!strcmp(tok, name))
			return 1;
	return 0;
}

static void enable_controllers(const char *root)
{
	char path[PATH_MAX], cmd[32];
	int err;

	mkpath(path, "%s/cgroup.subtree_control", root);
	for (size_t i = 0; i < ARRAY_SIZE(controllers); i++) {
		if (listed(path, controllers[i]))
			continue;
		snprintf(cmd, sizeof(cmd), "+%s", controllers[i]);
		err = write_file(path, cmd);
		if (err)
			fprintf(stderr, "%s: warning: enable %s in %s: %s\n", prog, controllers[i],
				path, strerror(err));
		else
			enabled[i] = 1;
	}
}

static void disable_controllers(const char *root)
{
	char path[PATH_MAX], cmd[32];

	mkpath(path, "%s/cgroup.subtree_control", root);
	for (size_t i = 0; i < ARRAY_SIZE(controllers); i++) {
		if (!enabled[i])
			continue;
		snprintf(cmd, sizeof(cmd), "-%s", controllers[i]);
		write_file(path, cmd);
	}
}

static void group_path(char *buf, const char *root, unsigned int i)
{
	mkpath(buf, "%s/cgchurn-%d-%u", root, (int)getpid(), i);
}

static void __attribute__((noreturn))
child(const char *group, unsigned int idx, size_t len, int wfd, pid_t parent)
{
	struct child_msg msg = { .idx = idx };
	char path[PATH_MAX];
	size_t ps = sysconf(_SC_PAGESIZE);
	uint64_t i;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	mkpath(path, "%s/cgroup.procs", group);
	msg.err = write_file(path, "0");
	if (write(wfd, &msg, sizeof(msg)) != sizeof(msg) || msg.err)
		_exit(1);
	close(wfd);
	for (i = 0;; i++) {
		char *p =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			usleep(1000);
			continue;
		}
		for (size_t off = 0; off < len; off += ps)
			p[off] = (char)i;
		munmap(p, len);
	}
}

int main(int argc, char **argv)
{
	uint64_t groups = 0, iter = 0, kb = 256, i, t0 = 0, t1 = 0;
	const char *root, *stat_names[] = { "memory.stat", "cpu.stat" };
	int stat_fd[2] = { -1, -1 };
	unsigned int made = 0, forked = 0, ready = 0, nstat = 0;
	pid_t *pids = NULL, self = getpid();
	int pipefd[2] = { -1, -1 };
	char path[PATH_MAX], *buf = NULL;
	size_t buflen = 1 << 20;
	struct sigaction sa = { .sa_handler = on_signal };
	int opt, ret = 1;

	while ((opt = getopt(argc, argv, ":g:i:m:h")) != -1) {
		switch (opt) {
		case 'g':
			groups = parse_num(optarg, opt, 1, 4096);
			break;
		case 'i':
			iter = parse_num(optarg, opt, 1, 1000000000);
			break;
		case 'm':
			kb = parse_num(optarg, opt, 4, 1 << 20);
			break;
		case 'h':
			usage();
			return 0;
		default:
			bad_option(opt);
		}
	}
	if (!groups)
		usage_error("-g GROUPS is required");
	if (!iter)
		usage_error("-i ITER is required");
	if (optind + 1 != argc)
		usage_error(optind == argc ? "ROOT is required" : "too many arguments");
	root = argv[optind];
	if (strlen(root) > PATH_MAX - 64)
		usage_error("ROOT is too long");

	mkpath(path, "%s/cgroup.procs", root);
	if (access(path, F_OK) < 0) {
		warn_errno(errno, "not a cgroup2 directory: %s", path);
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	pids = calloc(groups, sizeof(*pids));
	buf = malloc(buflen);
	if (!pids || !buf) {
		warn_errno(ENOMEM, "malloc");
		goto out;
	}
	enable_controllers(root);
	for (made = 0; made < groups; made++) {
		group_path(path, root, made);
		if (mkdir(path, 0755) < 0) {
			warn_errno(errno, "mkdir %s", path);
			goto out;
		}
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		warn_errno(errno, "pipe");
		goto out;
	}
	for (forked = 0; forked < groups; forked++) {
		pid_t pid;

		group_path(path, root, forked);
		pid = fork();
		if (pid < 0) {
			warn_errno(errno, "fork");
			goto out;
		}
		if (pid == 0) {
			close(pipefd[0]);
			child(path, forked, kb * 1024, pipefd[1], self);
		}
		pids[forked] = pid;
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	while (ready < groups) {
		struct child_msg msg;
		ssize_t n = read(pipefd[0], &msg, sizeof(msg));

		if (n < 0 && errno == EINTR && !interrupted)
			continue;
		if (n < 0) {
			warn_errno(errno, interrupted ? "interrupted" : "read pipe");
			goto out;
		}
		if (n != sizeof(msg)) {
			fprintf(stderr, "%s: %u of %u children died before joining their group\n",
				prog, (unsigned int)(groups - ready), (unsigned int)groups);
			goto out;
		}
		if (msg.err) {
			group_path(path, root, msg.idx);
			warn_errno(msg.err, "move child into %s", path);
			goto out;
		}
		ready++;
	}

	for (size_t s = 0; s < ARRAY_SIZE(stat_names); s++) {
		mkpath(path, "%s/%s", root, stat_names[s]);
		stat_fd[nstat] = open(path, O_RDONLY | O_CLOEXEC);
		if (stat_fd[nstat] >= 0)
			nstat++;
		else if (errno != ENOENT)
			warn_errno(errno, "open %s", path);
	}
	if (!nstat) {
		fprintf(stderr, "%s: neither %s/memory.stat nor %s/cpu.stat can be read\n", prog,
			root, root);
		goto out;
	}
	t0 = now_ns();
	for (i = 0; i < iter && !interrupted; i++) {
		for (unsigned int s = 0; s < nstat; s++) {
			if (read_whole(stat_fd[s], buf, buflen) < 0) {
				warn_errno(errno, "read %s stat file", root);
				goto out;
			}
		}
	}
	t1 = now_ns();
	if (interrupted) {
		fprintf(stderr, "%s: interrupted\n", prog);
		goto out;
	}
	for (unsigned int c = 0; c < forked; c++) {
		int status;

		if (waitpid(pids[c], &status, WNOHANG) == pids[c]) {
			fprintf(stderr, "%s: child %u (pid %d) died during the run\n", prog, c,
				(int)pids[c]);
			pids[c] = 0;
			goto out;
		}
	}
	ret = 0;
out:
	for (unsigned int s = 0; s < nstat; s++)
		close(stat_fd[s]);
	for (unsigned int c = 0; c < forked; c++)
		if (pids[c] > 0)
			kill(pids[c], SIGKILL);
	for (unsigned int c = 0; c < forked; c++)
		while (pids[c] > 0 && waitpid(pids[c], NULL, 0) < 0 && errno == EINTR)
			;
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	for (unsigned int g = 0; g < made; g++) {
		group_path(path, root, g);
		/* A reaped child may still be leaving its cgroup: retry EBUSY for 5 s. */
		for (int tries = 0; rmdir(path) < 0; tries++) {
			if (errno != EBUSY || tries >= 500) {
				warn_errno(errno, "rmdir %s", path);
				ret = 1;
				break;
			}
			usleep(10000);
		}
	}
	disable_controllers(root);
	if (!ret)
		printf("groups=%u reads=%" PRIu64 " elapsed_ns=%" PRIu64 "\n", (unsigned int)groups,
		       iter, t1 - t0);
	free(pids);
	free(buf);
	return ret;
}
