// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "ctl.h"
#include "macro.h"

static const char *const cmd_names[] = {
	[CTL_STATUS] = "status",   [CTL_SET] = "set",	    [CTL_WATCH] = "watch",
	[CTL_DISABLE] = "disable", [CTL_ENABLE] = "enable",
};

int ctl_parse_request(const char *buf, size_t len, struct ctl_request *req, char *err,
		      size_t errlen)
{
	json_t *root, *policy = NULL;
	const char *cmd = NULL, *key;
	char *doc = NULL;
	json_error_t je;
	json_t *v;
	size_t i;
	int r = -EINVAL;

	memset(req, 0, sizeof(*req));
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		snprintf(err, errlen, "not JSON: %s", je.text);
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "a request is a JSON object");
		goto out;
	}
	json_object_foreach(root, key, v)
	{
		if (!strcmp(key, "cmd") && json_is_string(v)) {
			cmd = json_string_value(v);
		} else if (!strcmp(key, "policy") && json_is_object(v)) {
			policy = v;
		} else {
			snprintf(err, errlen, "unknown key or wrong type: \"%s\"", key);
			goto out;
		}
	}
	for (i = 1; cmd && i < ARRAY_SIZE(cmd_names); i++)
		if (!strcmp(cmd, cmd_names[i]))
			req->cmd = (enum ctl_cmd)i;
	if (!req->cmd) {
		snprintf(err, errlen, "\"cmd\" must be status, set, watch, disable or enable");
		goto out;
	}
	if ((req->cmd == CTL_SET) != !!policy) {
		snprintf(err, errlen, "\"policy\" goes with \"set\", and only with it");
		goto out;
	}
	if (policy) {
		doc = json_dumps(policy, JSON_COMPACT);
		if (!doc) {
			r = -ENOMEM;
			goto out;
		}
		r = policy_doc_parse(doc, strlen(doc), &req->doc, err, errlen);
		goto out;
	}
	r = 0;
out:
	free(doc);
	json_decref(root);
	if (r < 0)
		req->cmd = 0;
	return r;
}

bool ctl_peer_allowed(const struct ucred *cred, gid_t group)
{
	gid_t groups[64];
	int n = ARRAY_SIZE(groups), i;
	struct passwd *pw;

	if (cred->uid == 0)
		return true;
	if (group == (gid_t)-1)
		return false;
	if (cred->gid == group)
		return true;
	pw = getpwuid(cred->uid);
	if (!pw || getgrouplist(pw->pw_name, pw->pw_gid, groups, &n) < 0)
		return false;
	for (i = 0; i < n; i++)
		if (groups[i] == group)
			return true;
	return false;
}

int ctl_listen(const char *path, gid_t group)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_free_ char *dir = NULL;
	char *slash;
	int fd, r;

	/*
	 * Socket activation: kmem-agent.socket passed it, blocking. libevent's
	 * listener accepts until EAGAIN, so a blocking one would stop the loop
	 * at the second accept.
	 */
	if (sd_listen_fds(1) == 1 &&
	    sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_SEQPACKET, 1, path, 0) > 0) {
		fd = SD_LISTEN_FDS_START;
		r = fcntl(fd, F_GETFL);
		if (r < 0 || fcntl(fd, F_SETFL, r | O_NONBLOCK) < 0 ||
		    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
			return negative_errno();
		return fd;
	}
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	dir = strdup(path);
	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return negative_errno();
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return negative_errno();
	/* a stale socket from an earlier run */
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(path, group == (gid_t)-1 ? 0600 : 0660) < 0 ||
	    (group != (gid_t)-1 && chown(path, 0, group) < 0) || listen(fd, 16) < 0) {
		r = negative_errno();
		close(fd);
		return r;
	}
	return fd;
}
