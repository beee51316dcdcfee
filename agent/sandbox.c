// SPDX-License-Identifier: GPL-2.0
/*
 * The network child's namespaces and system call filter (sandbox.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdbool.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "sandbox.h"

/* Where the new root is made: every system has it, and it is covered only in our view. */
#define STAGE "/tmp"

/* What the resolver reads, if present; the first ones it needs. */
static const char *const resolver_files[] = {
	"/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
};

#define JOURNAL_SOCKET "/run/systemd/journal/socket"

/* What is kept, opened before the stage covers anything (the spool may be below it). */
struct keep {
	const char *path;
	int fd; /* O_PATH */
	bool dir, writable;
};

static int write_text(const char *path, const char *text)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return negative_errno();
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		return negative_errno();
	return 0;
}

/*
 * Our own ids, mapped to themselves, so files the child makes are its
 * own. /proc/self belongs to a process only while it is dumpable.
 */
static int map_ids(uid_t uid, gid_t gid)
{
	char map[64];
	int r;

	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		return negative_errno();
	r = write_text("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (r == 0)
		r = write_text("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if (r == 0)
		r = write_text("/proc/self/gid_map", map);
	return r;
}

/*
 * The NSS modules nsswitch.conf names for hosts, loaded now: after the
 * move there is no /lib to load them from. glibc's own "files" and "dns"
 * are built in; a name that does not load is left to fail later.
 */
static void preload_nss(void)
{
	_cleanup_fclose_ FILE *f = fopen("/etc/nsswitch.conf", "re");
	char line[512], lib[96], *w, *save;

	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "hosts:", 6))
			continue;
		for (w = strtok_r(line + 6, " \t\n", &save); w;
		     w = strtok_r(NULL, " \t\n", &save)) {
			if (w[0] == '[' || !strcmp(w, "files") || !strcmp(w, "dns"))
				continue;
			snprintf(lib, sizeof(lib), "libnss_%s.so.2", w);
			dlopen(lib, RTLD_NOW | RTLD_NODELETE);
		}
	}
}

/* mkdir -p of a path below the current directory. */
static int make_dirs(const char *path)
{
	char buf[4096];
	size_t i;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (i = 1; buf[i]; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return negative_errno();
		buf[i] = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return negative_errno();
	return 0;
}

/* A mount point in the stage for k: a directory, or an empty file. */
static int make_point(const struct keep *k, const char *at)
{
	_cleanup_free_ char *parent = strdup(at);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	int fd, r;

	if (!parent)
		return -ENOMEM;
	if (k->dir)
		return make_dirs(at);
	if (slash) {
		*slash = '\0';
		r = make_dirs(parent);
		if (r < 0)
			return r;
	}
	fd = open(at, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return negative_errno();
	close(fd);
	return 0;
}

/*
 * k bound into the stage at its own path, nosuid, nodev, noexec and, but
 * for the spool, read-only. A remount must keep the flags the mount had
 * (a user namespace may not drop them).
 */
static int bind_keep(const struct keep *k)
{
	unsigned long flags = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC;
	char src[64], at[4096];
	struct statvfs sv;
	int r;

	snprintf(src, sizeof(src), "/proc/self/fd/%d", k->fd);
	snprintf(at, sizeof(at), ".%s", k->path);
	r = make_point(k, at);
	if (r < 0)
		return r;
	if (mount(src, at, NULL, MS_BIND | MS_REC, NULL) < 0 || statvfs(at, &sv) < 0)
		return negative_errno();
	if (!k->writable || (sv.f_flag & ST_RDONLY))
		flags |= MS_RDONLY;
	if (sv.f_flag & ST_NOATIME)
		flags |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		flags |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		flags |= MS_RELATIME;
	if (mount(NULL, at, NULL, flags, NULL) < 0)
		return negative_errno();
	return 0;
}

static size_t open_keeps(const char *spool, struct keep *k, size_t max)
{
	size_t n = 0, i;
	struct stat st;

	if (spool)
		k[n++] = (struct keep){ .path = spool, .dir = true, .writable = true };
	for (i = 0; i < ARRAY_SIZE(resolver_files) && n < max; i++)
		k[n++] = (struct keep){ .path = resolver_files[i] };
	if (n < max)
		k[n++] = (struct keep){ .path = JOURNAL_SOCKET };
	for (i = 0; i < n; i++) {
		k[i].fd = open(k[i].path, O_PATH | O_CLOEXEC);
		if (k[i].fd >= 0 && fstat(k[i].fd, &st) == 0)
			k[i].dir = S_ISDIR(st.st_mode);
	}
	return n;
}

static void close_keeps(struct keep *k, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (k[i].fd >= 0)
			close(k[i].fd);
}

/* The stage made and filled: a tmpfs with each kept path at its own place. */
static int stage(struct keep *k, size_t n, const char *spool)
{
	size_t i;
	int r;

	if (mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0755,size=64k,nr_inodes=256") < 0 ||
	    chdir(STAGE) < 0)
		return negative_errno();
	for (i = 0; i < n; i++) {
		/* the spool must be there; the others only when the host has them */
		if (k[i].fd < 0 && k[i].path != spool)
			continue;
		if (k[i].fd < 0)
			return -ENOENT;
		r = bind_keep(&k[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The root filesystem of an initramfs cannot be pivoted from (EINVAL):
 * the stage is moved over it, as switch_root does, and becomes the root
 * by chroot. The old root stays beneath it, out of reach once the
 * capabilities are dropped and the filter forbids chroot.
 */
static int move_over_root(void)
{
	if (rmdir("oldroot") < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0)
		return negative_errno();
	return 0;
}

/* The stage becomes /, the old root goes, and / is read-only. */
static int pivot(void)
{
	if (mkdir("oldroot", 0700) < 0)
		return negative_errno();
	if (syscall(SYS_pivot_root, ".", "oldroot") == 0) {
		if (umount2("/oldroot", MNT_DETACH) < 0 || rmdir("/oldroot") < 0)
			return negative_errno();
	} else if (errno != EINVAL || move_over_root() < 0) {
		return negative_errno();
	}
	if (chdir("/") < 0 ||
	    mount(NULL, "/", NULL,
		  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return negative_errno();
	return 0;
}

/* The capabilities a new user namespace gives its first process, all of them gone. */
static int drop_capabilities(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { { 0 } };

	if (syscall(SYS_capset, &hdr, data) < 0)
		return negative_errno();
	return 0;
}

/* How a uid we do not map looks from inside: the kernel's overflow uid. */
static uid_t overflow_uid(void)
{
	char text[16] = "";
	_cleanup_close_ int fd = open("/proc/sys/kernel/overflowuid", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, text, sizeof(text) - 1) <= 0)
		return 65534;
	return (uid_t)strtoul(text, NULL, 10);
}

int sandbox_enter(const char *spool, uid_t *parent_uid)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	struct keep k[ARRAY_SIZE(resolver_files) + 2];
	size_t n;
	int r;

	preload_nss();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return -EOPNOTSUPP;
	if (*parent_uid != uid)
		*parent_uid = overflow_uid();
	/* nothing has changed in the view before the first mount */
	if (map_ids(uid, gid) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		r = -EOPNOTSUPP;
	} else {
		n = open_keeps(spool, k, ARRAY_SIZE(k));
		r = stage(k, n, spool);
		close_keeps(k, n);
		if (r == 0)
			r = pivot();
		if (r == 0)
			r = drop_capabilities();
	}
	/* so that another process of the same user cannot trace it */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 && r == 0)
		r = negative_errno();
	return r;
}

/*
 * What the child calls once set up. Seen under strace -f through
 * tests/integration (agent-local, loopback, fleet, kmemd-refusals) and a
 * server named in /etc/hosts: libevent's epoll loop, the channel to the
 * parent, TLS over TCP, the spool's files, journald's socket, the
 * resolver's files and nscd probe (lseek, uname, futex). Added from
 * glibc's resolver, which the tests cannot reach: DNS over UDP and TCP
 * (sendto, recvfrom, sendmmsg, poll, ioctl FIONREAD) and AI_ADDRCONFIG's
 * netlink query (bind, getsockname). And the allocator, the clocks'
 * fallbacks, OpenSSL's reseeding and the exit.
 */
static const int allowed[] = {
	SCMP_SYS(read),		 SCMP_SYS(write),
	SCMP_SYS(readv),	 SCMP_SYS(writev),
	SCMP_SYS(close),	 SCMP_SYS(openat),
	SCMP_SYS(newfstatat),	 SCMP_SYS(fstat),
	SCMP_SYS(lseek),	 SCMP_SYS(renameat),
	SCMP_SYS(renameat2),	 SCMP_SYS(unlinkat),
	SCMP_SYS(fsync),	 SCMP_SYS(epoll_ctl),
	SCMP_SYS(epoll_wait),	 SCMP_SYS(epoll_pwait),
	SCMP_SYS(poll),		 SCMP_SYS(connect),
	SCMP_SYS(shutdown),	 SCMP_SYS(sendmsg),
	SCMP_SYS(recvmsg),	 SCMP_SYS(sendto),
	SCMP_SYS(recvfrom),	 SCMP_SYS(sendmmsg),
	SCMP_SYS(getsockopt),	 SCMP_SYS(setsockopt),
	SCMP_SYS(bind),		 SCMP_SYS(getsockname),
	SCMP_SYS(uname),	 SCMP_SYS(getpid),
	SCMP_SYS(futex),	 SCMP_SYS(brk),
	SCMP_SYS(mmap),		 SCMP_SYS(munmap),
	SCMP_SYS(mremap),	 SCMP_SYS(madvise),
	SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday),
	SCMP_SYS(getrandom),	 SCMP_SYS(restart_syscall),
	SCMP_SYS(exit),		 SCMP_SYS(exit_group),
};

/* Address families the child may open sockets of. */
static const int families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };

static int add_rules(scmp_filter_ctx ctx)
{
	size_t i;
	int r = 0;

	for (i = 0; i < ARRAY_SIZE(allowed) && r == 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
	for (i = 0; i < ARRAY_SIZE(families) && r == 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i]));
	/* the resolver asks how much a UDP socket holds */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)FIONREAD));
	/* stdio asks whether stderr is a terminal: harmless to deny */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTTY), SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_NE, (scmp_datum_t)FIONREAD));
	return r;
}

int sandbox_filter(void)
{
	scmp_filter_ctx ctx;
	int r;

	/* a kernel built without seccomp (CONFIG_SECCOMP) */
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL)
		return -EOPNOTSUPP;
	/* the child has one thread: where the kernel cannot kill the process, killing it will do */
	ctx = seccomp_init(SCMP_ACT_KILL_PROCESS) ?: seccomp_init(SCMP_ACT_KILL);
	if (!ctx)
		return -ENOMEM;
	r = add_rules(ctx);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}
