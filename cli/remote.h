/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmemctl's calls to kmemd's admin API: HTTPS (libevent over OpenSSL) with
 * the operator's certificate. Where kmemd is and which certificate to use
 * come from --server/--ca/--cert/--key, else from the config file
 * ($XDG_CONFIG_HOME/kmemctl/config, or --config):
 *
 *	[kmemd]
 *	server = kmemd.example.net:8443
 *	ca = /etc/kmemctl/ca.crt
 *	cert = /home/ops/.config/kmemctl/ops.crt
 *	key = /home/ops/.config/kmemctl/ops.key
 */
#ifndef KMEMCTL_REMOTE_H
#define KMEMCTL_REMOTE_H

#include <event2/http.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct remote_target {
	const char *server; /* HOST:PORT */
	const char *ca; /* kmemd's CA */
	const char *cert, *key; /* NULL: no client certificate (enrollment) */
};

/*
 * One HTTPS request to t: EXIT_OK with kmemd's status code and body
 * (malloc'ed, NUL after it) whatever the code; else the reason is on
 * stderr and the exit code says it: EXIT_UNREACHABLE (no connection),
 * EXIT_REFUSED (TLS ended it), EXIT_USAGE (a bad address or certificate).
 */
int remote_request(const struct remote_target *t, enum evhttp_cmd_type method, const char *path,
		   const char *ctype, const void *body, size_t len, int *code, uint8_t **reply,
		   size_t *reply_len);

/*
 * One call: method and path (with its query), a body of content type
 * ctype (NULL: none). On 2xx, *reply is the JSON kmemd answered (NULL if
 * it was not JSON) and EXIT_OK is returned. Otherwise the reason is on
 * stderr and the exit code says which: EXIT_UNREACHABLE (no connection),
 * EXIT_REFUSED (the TLS handshake, or kmemd answered 4xx), EXIT_ERROR
 * (anything else, with kmemd's own error text), EXIT_USAGE (no server or
 * certificate configured).
 */
int remote_call(enum evhttp_cmd_type method, const char *path, const char *ctype, const void *body,
		size_t len, json_t **reply);
/* The same, with kmemd's 2xx body as it came (malloc'ed, NUL after it) in *reply. */
int remote_call_raw(enum evhttp_cmd_type method, const char *path, const char *ctype,
		    const void *body, size_t len, uint8_t **reply, size_t *reply_len);

/* remote_call() with a JSON body (stolen). */
int remote_json(enum evhttp_cmd_type method, const char *path, json_t *body, json_t **reply);

/*
 * A verb without arguments that shows GET path: usage on stderr when
 * argc is not 1; with -j the reply printed and *reply NULL; else *reply
 * for the caller to show (json_decref() it).
 */
int remote_show(int argc, const char *usage, const char *path, json_t **reply);
/*
 * A verb of one FILE argument (a signed bundle, at most REMOTE_FILE_MAX
 * bytes) POSTed to path as ctype: usage on stderr when argc is not 2; with
 * -j the reply printed and *reply NULL; else *reply for the caller.
 */
#define REMOTE_FILE_MAX (64 << 10)
int remote_post_file(int argc, char **argv, const char *usage, const char *path, const char *ctype,
		     json_t **reply);
/* The same without the usage: GET path, printed with -j (*reply NULL), else *reply. */
int remote_get(const char *path, json_t **reply);

#endif
