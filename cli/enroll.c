// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl enroll: a host's first certificate, from kmemd's POST /v1/enroll.
 *   kmemctl enroll -s HOST:PORT -C CA -S SECRET_FILE -n HOST_ID -o DIR
 * Makes a key in DIR/HOST_ID.key (0600, never leaves the host), sends a
 * CSR with the enrollment secret, writes DIR/HOST_ID.crt. The CA file
 * pins kmemd's certificate: the secret is never sent to anyone else.
 */
#include <errno.h>
#include <event2/http.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "kmemctl.h"
#include "kmemctl/v1/enroll.pb-c.h"
#include "log.h"
#include "macro.h"
#include "pki.h"
#include "remote.h"
#include "report-check.h"
#include "text.h"

static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");
	int ok;

	if (!f)
		return negative_errno();
	ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -EIO;
}

int do_enroll(int argc, char **argv)
{
	static const char usage[] =
		"usage: kmemctl enroll -s HOST:PORT -C CA -S SECRET_FILE -n HOST_ID -o DIR\n";
	const char *server = NULL, *ca = NULL, *secret_file = NULL, *host = NULL, *dir = NULL;
	Kmemctl__V1__EnrollRequest er = KMEMCTL__V1__ENROLL_REQUEST__INIT;
	_cleanup_free_ char *secret = NULL, *csr = NULL, *keyfile = NULL, *crtfile = NULL;
	_cleanup_free_ uint8_t *body = NULL, *reply = NULL;
	Kmemctl__V1__EnrollReply *rr = NULL;
	size_t len, reply_len = 0;
	EVP_PKEY *key = NULL;
	int c, code = 0, r;

	optind = 0;
	while ((c = getopt(argc, argv, "s:C:S:n:o:")) != -1) {
		switch (c) {
		case 's':
			server = optarg;
			break;
		case 'C':
			ca = optarg;
			break;
		case 'S':
			secret_file = optarg;
			break;
		case 'n':
			host = optarg;
			break;
		case 'o':
			dir = optarg;
			break;
		default:
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc || !server || !ca || !secret_file || !host || !dir) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	if (!text_host_id_valid(host, REPORT_HOST_ID_MAX)) {
		log_error("host id '%s' is not 1 to %d of " TEXT_HOST_ID_GRAMMAR, host,
			  REPORT_HOST_ID_MAX);
		return EXIT_USAGE;
	}
	r = read_file_max(secret_file, 1024, &secret, &len);
	if (r < 0)
		return log_error_errno(r, "reading the secret '%s' failed: %m", secret_file),
		       EXIT_ERROR;
	secret[strcspn(secret, "\r\n")] = '\0';
	if (asprintf(&keyfile, "%s/%s.key", dir, host) < 0 ||
	    asprintf(&crtfile, "%s/%s.crt", dir, host) < 0)
		return EXIT_ERROR;
	if (access(keyfile, F_OK) == 0) {
		log_error("'%s' exists; not replacing a host key", keyfile);
		return EXIT_ERROR;
	}
	r = pki_keygen(PKI_ROLE_HOST, &key);
	if (r == 0)
		r = pki_make_csr(key, host, &csr);
	if (r < 0) {
		EVP_PKEY_free(key);
		return log_error_errno(r, "making a key and CSR failed: %m"), EXIT_ERROR;
	}
	er.secret = secret;
	er.host_id = (char *)host;
	er.csr_pem = csr;
	len = kmemctl__v1__enroll_request__get_packed_size(&er);
	body = malloc(len);
	if (!body) {
		EVP_PKEY_free(key);
		return EXIT_ERROR;
	}
	kmemctl__v1__enroll_request__pack(&er, body);
	r = remote_request(&(struct remote_target){ .server = server, .ca = ca }, EVHTTP_REQ_POST,
			   "/v1/enroll", "application/x-protobuf", body, len, &code, &reply,
			   &reply_len);
	if (r != EXIT_OK) {
		EVP_PKEY_free(key);
		return r;
	}
	rr = kmemctl__v1__enroll_reply__unpack(NULL, reply_len, reply);
	if (!rr) {
		EVP_PKEY_free(key);
		log_error("kmemd at %s answered %d without an enrollment reply", server, code);
		return EXIT_ERROR;
	}
	if (code != 200 || !rr->cert_pem || !rr->cert_pem[0]) {
		log_error("kmemd refused the enrollment (%d): %s", code,
			  rr->reason ? rr->reason : "");
		kmemctl__v1__enroll_reply__free_unpacked(rr, NULL);
		EVP_PKEY_free(key);
		return EXIT_REFUSED;
	}
	r = pki_write_key(keyfile, key);
	if (r == 0)
		r = write_text(crtfile, rr->cert_pem);
	kmemctl__v1__enroll_reply__free_unpacked(rr, NULL);
	EVP_PKEY_free(key);
	if (r < 0)
		return log_error_errno(r, "writing '%s' failed: %m", crtfile), EXIT_ERROR;
	printf("enrolled %s: %s\n", host, crtfile);
	return EXIT_OK;
}
