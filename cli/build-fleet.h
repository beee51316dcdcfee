/* SPDX-License-Identifier: GPL-2.0 */
/* kmemctl build's verbs through kmemd, and what build record --build-id fetches. */
#ifndef KMEMCTL_BUILD_FLEET_H
#define KMEMCTL_BUILD_FLEET_H

/* A signed record of at most 16 KiB and its signature. */
#define BUILD_BUNDLE_MAX (64 << 10)

int build_list(int argc, char **argv);
int build_file(int argc, char **argv);
int build_publish(int argc, char **argv);

/* kmemd's copy of build_id's build file into out ("-": stdout); an EXIT_ code. */
int build_fetch_file(const char *build_id, const char *out);

/*
 * package at version (apt-get download, dpkg -x) into a new *dir under
 * $TMPDIR, and the source tarball it holds in *tarball (both malloc'ed;
 * the caller removes dir). 0 or a negative errno, logged.
 */
int build_fetch_source(const char *package, const char *version, char **dir, char **tarball);
/* dir and all in it; a failure is logged. */
void build_remove_dir(const char *dir);

#endif
