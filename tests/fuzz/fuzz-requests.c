// SPDX-License-Identifier: GPL-2.0
/*
 * What clients send kmemd besides reports (daemon/requests.h), the first
 * byte choosing the parser and the rest its input:
 *   0  an EnrollRequest (protobuf) and enroll_request_valid()
 *   1  the body of POST /v1/enroll/secrets: secret_request_parse()
 *   2  a query string as evhttp splits it, with its numbers read as the
 *      admin routes read times (query_number())
 *   3  a selector (POST /v1/assignments): selector_parse()
 *   4  a rollout document (POST /v1/rollouts): rollout_spec_parse()
 *   5  an operator certificate's fingerprint (POST /v1/operators/revoke)
 * What a parser takes must be within its bounds.
 */
#include <sys/queue.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <string.h>

#include "fuzz.h"
#include "report-check.h"
#include "requests.h"
#include "rollout.h"
#include "selector.h"
#include "text.h"

static void enroll(const uint8_t *data, size_t size)
{
	Kmemctl__V1__EnrollRequest *er = kmemctl__v1__enroll_request__unpack(NULL, size, data);

	if (!er)
		return;
	/* a renewal's is an enrollment's without the secret */
	if (enroll_request_valid(er))
		FUZZ_CHECK(renew_request_valid(er));
	if (renew_request_valid(er))
		FUZZ_CHECK(text_name_valid(er->host_id, REPORT_HOST_ID_MAX) &&
			   strlen(er->csr_pem) <= ENROLL_CSR_MAX);
	if (enroll_request_valid(er))
		FUZZ_CHECK(text_name_valid(er->host_id, REPORT_HOST_ID_MAX) && er->secret[0] &&
			   strlen(er->csr_pem) <= ENROLL_CSR_MAX);
	kmemctl__v1__enroll_request__free_unpacked(er, NULL);
}

static void secret(const char *text, size_t size)
{
	struct store_secret sec;
	char why[256];

	if (secret_request_parse(text, size, &sec, 1000, why, sizeof(why)) < 0)
		return;
	FUZZ_CHECK(sec.max_uses >= 0 && sec.max_uses <= SECRET_USES_MAX);
	FUZZ_CHECK(sec.expires_ms == 0 ||
		   (sec.expires_ms > 1000 && sec.expires_ms <= 1000 + SECRET_EXPIRES_MAX_S * 1000));
	FUZZ_CHECK(!sec.host_pattern[0] || host_pattern_valid(sec.host_pattern));
}

static void query(const char *text)
{
	struct evkeyvalq q = { 0 };
	struct evkeyval *kv;
	int64_t v;

	if (evhttp_parse_query_str(text, &q) < 0)
		return;
	TAILQ_FOREACH(kv, &q, next)
	{
		v = -1;
		if (query_number(kv->value, QUERY_MS_MAX, &v) == 0)
			FUZZ_CHECK(v >= 0 && v <= QUERY_MS_MAX);
	}
	evhttp_clear_headers(&q);
}

static void selector(const char *text, size_t len)
{
	struct selector s;
	char why[256];

	if (selector_parse(text, len, &s, why, sizeof(why)) == 0)
		FUZZ_CHECK(s.nlabels <= SELECTOR_MAX_LABELS);
}

static void rollout(const char *text, size_t len)
{
	struct rollout_spec s;
	char why[256];

	if (rollout_spec_parse(text, len, &s, why, sizeof(why)) == 0)
		FUZZ_CHECK(s.nwaves >= 1 && s.nwaves <= ROLLOUT_MAX_WAVES && s.version >= 1);
}

static void fingerprint(const char *text)
{
	char fp[65];

	if (!fingerprint_parse(text, fp))
		return;
	FUZZ_CHECK(strlen(fp) == 64);
	for (size_t i = 0; i < 64; i++)
		FUZZ_CHECK((fp[i] >= '0' && fp[i] <= '9') || (fp[i] >= 'a' && fp[i] <= 'f'));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (!size)
		return 0;
	text = malloc(size);
	FUZZ_CHECK(text);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 6) {
	case 0:
		enroll(data + 1, size - 1);
		break;
	case 1:
		secret(text, size - 1);
		break;
	case 2:
		query(text);
		break;
	case 3:
		selector(text, size - 1);
		break;
	case 4:
		rollout(text, size - 1);
		break;
	default:
		fingerprint(text);
	}
	free(text);
	return 0;
}
