// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "report-check.h"
#include "requests.h"
#include "text.h"

bool renew_request_valid(const Kmemctl__V1__EnrollRequest *er)
{
	return text_host_id_valid(er->host_id, REPORT_HOST_ID_MAX) && er->csr_pem &&
	       strnlen(er->csr_pem, ENROLL_CSR_MAX + 1) <= ENROLL_CSR_MAX;
}

bool enroll_request_valid(const Kmemctl__V1__EnrollRequest *er)
{
	return er->secret && er->secret[0] && text_valid(er->secret, 128) &&
	       renew_request_valid(er);
}

bool host_pattern_valid(const char *p)
{
	size_t n = strnlen(p, sizeof(((struct store_secret *)0)->host_pattern));

	if (!n || n >= sizeof(((struct store_secret *)0)->host_pattern))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
		      (p[i] >= '0' && p[i] <= '9') || strchr("._-*?[]!", p[i])))
			return false;
	return true;
}

int secret_request_parse(const char *body, size_t len, struct store_secret *sec, int64_t now,
			 char *why, size_t whylen)
{
	json_int_t expires_in = 7 * 86400, uses = 0;
	const char *hosts = NULL;
	json_error_t je;
	json_t *o = NULL;
	int r = -EINVAL;

	*sec = (struct store_secret){ .created_ms = now };
	if (len) {
		o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
		if (!o || json_unpack_ex(o, &je, JSON_STRICT, "{s?I, s?I, s?s}", "expires_in_s",
					 &expires_in, "uses", &uses, "hosts", &hosts) < 0)
			goto bad;
	}
	if (expires_in < 0 || expires_in > SECRET_EXPIRES_MAX_S || uses < 0 ||
	    uses > SECRET_USES_MAX || (hosts && !host_pattern_valid(hosts)))
		goto bad;
	sec->expires_ms = expires_in ? now + (int64_t)expires_in * 1000 : 0;
	sec->max_uses = uses;
	snprintf(sec->host_pattern, sizeof(sec->host_pattern), "%s", hosts ?: "");
	r = 0;
	goto out;
bad:
	snprintf(why, whylen,
		 "want {\"expires_in_s\": 0 (never) to %lld, \"uses\": 0 (any) to %d, \"hosts\": "
		 "a pattern of host ids (" TEXT_NAME_CHARSET " and *?[]!)}, or no body",
		 SECRET_EXPIRES_MAX_S, SECRET_USES_MAX);
out:
	json_decref(o);
	return r;
}

int query_number(const char *s, int64_t max, int64_t *out)
{
	int64_t v = 0;
	size_t i;

	if (!s)
		return 0;
	if (!s[0])
		return -EINVAL;
	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9' || __builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, s[i] - '0', &v) || v > max)
			return -EINVAL;
	}
	*out = v;
	return 0;
}

bool fingerprint_parse(const char *s, char fp[65])
{
	size_t n = 0;

	for (; *s; s++) {
		if (*s == ':' && n % 2 == 0 && n > 0 && s[1])
			continue;
		if (!isxdigit((unsigned char)*s) || n == 64)
			return false;
		fp[n++] = (char)tolower((unsigned char)*s);
	}
	fp[n] = '\0';
	return n == 64;
}
