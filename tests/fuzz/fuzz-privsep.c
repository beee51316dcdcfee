// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer: packets on a privsep channel, as a compromised child (or a
 * broken parent) may write them, through privsep_recv() on a real
 * SOCK_SEQPACKET socketpair and then the receiving side's handling of
 * each type it takes: the parent's checks of requests and its reading of
 * results and signed policies (with no pinned key, as a policy from a
 * child must first verify), the control process's checks of states and
 * replies and its decoding of reports.
 *
 * Input: one byte choosing the channel and direction (and whether the
 * sender is the expected process), then packets, each a 16-bit
 * little-endian length and that many bytes (header and payload as sent).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kmemctl/v1/report.pb-c.h"
#include "pbjson.h"
#include "policy.h"
#include "privsep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct {
	enum privsep_side self, peer;
} channels[] = {
	{ PRIVSEP_PARENT, PRIVSEP_NETWORK },
	{ PRIVSEP_PARENT, PRIVSEP_CONTROL },
	{ PRIVSEP_CONTROL, PRIVSEP_PARENT },
	{ PRIVSEP_NETWORK, PRIVSEP_PARENT },
};

static _Alignas(16) uint8_t buf[PRIVSEP_MAX_PAYLOAD];

/* What the receiving process does with a message privsep_recv() took. */
static void handle(enum privsep_type type, size_t n)
{
	static const struct keyring none;
	struct policy_version cur = { 0 };
	Kmemctl__V1__PolicyPayload *p = NULL;
	Kmemctl__V1__Report *rep;
	static struct policy_doc doc;
	char why[POLICY_WHY_MAX];

	switch (type) {
	case PRIVSEP_POLICY:
		if (policy_check(&none, buf, n, 0, &cur, &p, &doc, why, sizeof(why)) == 0)
			abort();
		break;
	case PRIVSEP_REQUEST:
		privsep_check_request((const struct privsep_request *)buf);
		break;
	case PRIVSEP_STATE:
		privsep_check_state((const struct privsep_state *)buf);
		break;
	case PRIVSEP_REPLY:
		privsep_check_reply((const struct privsep_reply *)buf);
		break;
	case PRIVSEP_REPORT:
		rep = n > sizeof(uint64_t) ? kmemctl__v1__report__unpack(NULL, n - sizeof(uint64_t),
									 buf + sizeof(uint64_t)) :
					     NULL;
		if (rep) {
			json_decref(pbjson_from_message(&rep->base));
			kmemctl__v1__report__free_unpacked(rep, NULL);
		}
		break;
	default:
		break;
	}
}

/* Every message pending on fd, as the receiver's loop takes them. */
static void drain(int fd, enum privsep_side self, const struct privsep_peer *peer)
{
	enum privsep_type type;
	ssize_t n;

	for (;;) {
		n = privsep_recv(fd, self, peer, &type, buf, sizeof(buf));
		if (n == -EAGAIN || (n >= 0 && type == 0))
			return;
		if (n < 0 && n != -EBADMSG && n != -EPERM)
			abort();
		if (n >= 0)
			handle(type, (size_t)n);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fds[2] = { -1, -1 };
	struct privsep_peer peer;
	size_t off = 1, len;
	unsigned c;

	if (size < 1 || (fds[0] < 0 && privsep_pair(fds) < 0))
		return 0;
	c = data[0] % (2 * (unsigned)(sizeof(channels) / sizeof(channels[0])));
	peer = (struct privsep_peer){ .pid = getpid(),
				      .uid = getuid(),
				      .side = channels[c / 2].peer };
	/* odd: another process is expected, so the kernel's credentials refuse each */
	if (c & 1)
		peer.pid++;
	while (off + 2 <= size) {
		len = (size_t)data[off] | (size_t)data[off + 1] << 8;
		off += 2;
		if (len > size - off)
			len = size - off;
		if (send(fds[1], data + off, len, MSG_DONTWAIT) >= 0)
			drain(fds[0], channels[c / 2].self, &peer);
		off += len;
	}
	return 0;
}
