/* SPDX-License-Identifier: GPL-2.0 */
/* Route table types and reply helpers shared by kmemd's handlers. */
#ifndef KMEMD_SERVER_H
#define KMEMD_SERVER_H

#include <event2/http.h>
#include <stddef.h>

#include "kmemd.h"
#include "tls.h"

enum route_role {
	ROLE_ANY, /* no certificate needed (enrollment, health) */
	ROLE_HOST, /* host certificate from the fleet CA */
	ROLE_ADMIN, /* operator certificate */
};

typedef void (*route_handler)(struct evhttp_request *req, const struct kmemd_config *cfg,
			      const struct tls_identity *peer);

struct route {
	enum evhttp_cmd_type method;
	const char *path;
	enum route_role role;
	route_handler handler;
};

void reply_text(struct evhttp_request *req, int code, const char *reason, const char *text);
void reply_bytes(struct evhttp_request *req, const char *type, const void *data, size_t len);

void handle_health(struct evhttp_request *req, const struct kmemd_config *cfg,
		   const struct tls_identity *peer);
void handle_report(struct evhttp_request *req, const struct kmemd_config *cfg,
		   const struct tls_identity *peer);

#endif
