// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl build's verbs through kmemd (docs/operations.md, "Admitting a new
 * kernel build"): the builds hosts run while a mitigation waits for a
 * record, the build file kmemd keeps of each, and publishing a signed
 * record, which kmemd hands to every host of that build.
 *   kmemctl build list
 *   kmemctl build file BUILD_ID [-o FILE]
 *   kmemctl build publish BUNDLE
 * and what kmemctl build record --build-id takes from them: the build file,
 * and the source package at the version the build names.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build-fleet.h"
#include "fileio.h"
#include "kmemctl.h"
#include "log.h"
#include "macro.h"
#include "output.h"
#include "remote.h"

/* "rstat-yield 2, usercopy-fastpath 5" of {"rstat-yield": 2, ...}, or "-". */
static void waiting_text(json_t *waiting, char *buf, size_t size)
{
	const char *m;
	json_t *n;
	size_t len = 0;

	buf[0] = '\0';
	json_object_foreach(waiting, m, n)
	{
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s %lld", len ? ", " : "",
						m, (long long)json_integer_value(n));
	}
	if (!buf[0])
		snprintf(buf, size, "-");
}

int build_list(int argc, char **argv)
{
	static const char *const heads[] = {
		"BUILD", "RELEASE", "HOSTS", "WAITING FOR A RECORD", "RECORDS", "LAST SEEN", NULL
	};
	json_t *reply = NULL, *b;
	struct table *t;
	char waiting[512], ago[32];
	size_t i;
	int r;

	(void)argv;
	r = remote_show(argc, "kmemctl build list", "/v1/builds", &reply);
	if (r != EXIT_OK || !reply)
		return r;
	t = table_new(heads);
	json_array_foreach(json_object_get(reply, "builds"), i, b)
	{
		waiting_text(json_object_get(b, "waiting"), waiting, sizeof(waiting));
		table_cell(t, "%.12s", str(b, "build_id"));
		table_cell(t, "%s", str(b, "release"));
		table_cell(t, "%lld", num(b, "hosts"));
		table_cell(t, "%s", waiting);
		table_cell(t, "%lld", num(b, "records"));
		table_cell(t, "%s", out_ago(num(b, "last_seen_ms"), ago, sizeof(ago)));
	}
	table_print(t, stdout, cli.color);
	json_decref(reply);
	return EXIT_OK;
}

/* A build id as kmemd keys builds: hex, whole. */
static bool build_id_ok(const char *id)
{
	size_t n = strlen(id);

	return n && n <= 40 && n % 2 == 0 && strspn(id, "0123456789abcdef") == n;
}

int build_fetch_file(const char *build_id, const char *out)
{
	_cleanup_free_ uint8_t *text = NULL;
	_cleanup_free_ char *path = NULL;
	size_t len = 0;
	int r;

	if (!build_id_ok(build_id)) {
		fprintf(stderr,
			"kmemctl build: '%s' is not a build id (hex, as build list shows)\n",
			build_id);
		return EXIT_USAGE;
	}
	if (asprintf(&path, "/v1/builds/file?build_id=%s", build_id) < 0)
		return EXIT_ERROR;
	r = remote_call_raw(EVHTTP_REQ_GET, path, NULL, NULL, 0, &text, &len);
	if (r != EXIT_OK)
		return r;
	if (write_out(out, text, len) < 0) {
		fprintf(stderr, "kmemctl build: writing '%s' failed: %s\n", out, strerror(errno));
		return EXIT_ERROR;
	}
	return EXIT_OK;
}

int build_file(int argc, char **argv)
{
	const char *out = "-";
	int c;

	optind = 0;
	while ((c = getopt(argc, argv, "o:")) != -1) {
		if (c != 'o')
			goto usage;
		out = optarg;
	}
	if (optind != argc - 1)
		goto usage;
	return build_fetch_file(argv[optind], out);
usage:
	fprintf(stderr, "usage: kmemctl build file BUILD_ID [-o FILE]\n");
	return EXIT_USAGE;
}

int build_publish(int argc, char **argv)
{
	json_t *reply = NULL;
	int r = remote_post_file(argc, argv, "kmemctl build publish BUNDLE", "/v1/builds/records",
				 "application/octet-stream", &reply);

	if (r != EXIT_OK || !reply)
		return r;
	printf("published: build %s (%s), record %.16s%s; kmemd hands it to the build's hosts\n",
	       str(reply, "build_id"), str(reply, "release"), str(reply, "sha256"),
	       json_is_true(json_object_get(reply, "new")) ? "" : ", stored already");
	json_decref(reply);
	return EXIT_OK;
}

/* argv's program in dir, its output on stderr; 0 when it exited 0. */
static int run_in(const char *dir, char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (chdir(dir) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

void build_remove_dir(const char *dir)
{
	if (dir && nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		log_warning("removing '%s' failed: %s", dir, strerror(errno));
}

int build_fetch_source(const char *package, const char *version, char **dir, char **tarball)
{
	char tmpl[] = "/kmemctl-source.XXXXXX", *pkg = NULL;
	const char *tmp = getenv("TMPDIR") ?: "/tmp";
	glob_t debs = { 0 };
	int r;

	*tarball = NULL;
	if (asprintf(dir, "%s%s", tmp, tmpl) < 0 || !mkdtemp(*dir) ||
	    asprintf(&pkg, "%s=%s", package, version) < 0) {
		free(pkg);
		return -errno;
	}
	log_info("downloading %s into '%s'", pkg, *dir);
	r = run_in(*dir, (char *const[]){ "apt-get", "download", "-qq", pkg, NULL });
	free(pkg);
	if (r < 0) {
		log_error("apt-get download %s=%s failed: is the package version in the "
			  "archive apt knows?",
			  package, version);
		return r;
	}
	if (asprintf(&pkg, "%s/*.deb", *dir) < 0)
		return -ENOMEM;
	r = glob(pkg, 0, NULL, &debs) == 0 && debs.gl_pathc == 1 ?
		    run_in(*dir, (char *const[]){ "dpkg", "-x", debs.gl_pathv[0], ".", NULL }) :
		    -ENOENT;
	free(pkg);
	globfree(&debs);
	if (r < 0)
		return log_error_errno(r, "unpacking %s %s failed", package, version);
	if (asprintf(tarball, "%s/usr/src/%s.tar.xz", *dir, package) < 0)
		return -ENOMEM;
	return access(*tarball, R_OK) < 0 ? log_error_errno(-errno, "'%s': %m", *tarball) : 0;
}
