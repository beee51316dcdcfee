/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The root parent's side of a renewed host certificate: the network child
 * got it from kmemd (session.c) and hands over the new key with it; the
 * parent keeps them in [tls] key and cert only once they check out.
 */
#ifndef KMEM_AGENT_HOSTCERT_H
#define KMEM_AGENT_HOSTCERT_H

#include <stddef.h>
#include <stdint.h>

#include "agent.h"

/*
 * buf: a PEM private key and a PEM certificate, each followed by its NUL
 * (PRIVSEP_CERT). Kept when the certificate is for that key, from the
 * fleet CA ([tls] ca), a host's (OU host) with the CN of the certificate
 * in use, and runs later than it: the key is written first (0600), then
 * the certificate, each through a new file renamed over the old, the old
 * key linked at KEY.prev until both are in place, for hostcert_prev().
 * -EBADMSG for what does not check out.
 */
int hostcert_keep(const struct agent_config *cfg, const uint8_t *buf, size_t len);

/*
 * KEY.prev when it is there: the key of the certificate in place if the
 * agent stopped between writing a renewed key and its certificate.
 */
char *hostcert_prev(const char *key);

#endif
