// SPDX-License-Identifier: GPL-2.0
/*
 * kmemctl enroll: a host's first certificate, from kmemd's POST /v1/enroll.
 *   kmemctl enroll -s HOST:PORT -C CA -S SECRET_FILE -n HOST_ID -o DIR
 * Makes a key in DIR/HOST_ID.key (0600, never leaves the host), sends a
 * CSR with the enrollment secret, writes DIR/HOST_ID.crt. The CA file
 * pins kmemd's certificate: the secret is never sent to anyone else.
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "fileio.h"
#include "hostport.h"
#include "kmemctl.h"
#include "kmemctl/v1/enroll.pb-c.h"
#include "log.h"
#include "macro.h"
#include "pki.h"
#include "tls.h"

#define REPLY_MAX (64 << 10)

static int tcp_connect(const char *host, uint16_t port)
{
	struct timeval tv = { .tv_sec = 15 };
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *a;
	char serv[8];
	int fd = -1, r;

	snprintf(serv, sizeof(serv), "%u", port);
	r = getaddrinfo(host, serv, &hints, &ai);
	if (r)
		return -EHOSTUNREACH;
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd < 0 ? -ECONNREFUSED : fd;
}

/* One POST over TLS; the reply's status code and body (malloc'ed). */
static int https_post(const char *server, const char *ca, const char *path, const void *body,
		      size_t len, int *code, uint8_t **reply, size_t *reply_len)
{
	struct tls_config tc = { .ca = ca };
	char host[256], head[512], *buf = NULL, *end;
	SSL_CTX *ctx = NULL;
	SSL *ssl = NULL;
	size_t got = 0;
	uint16_t port;
	int fd = -1, n, r;

	r = hostport_split(server, host, sizeof(host), &port, false);
	if (r < 0)
		return r;
	r = tls_client_ctx(&tc, &ctx);
	if (r == 0)
		r = tls_client_ssl(ctx, host, &ssl);
	if (r == 0) {
		fd = tcp_connect(host, port);
		r = fd < 0 ? fd : 0;
	}
	if (r == 0 && (!SSL_set_fd(ssl, fd) || SSL_connect(ssl) != 1))
		r = -EPROTO;
	n = snprintf(head, sizeof(head),
		     "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-protobuf\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
		     path, host, len);
	if (r == 0 && (SSL_write(ssl, head, n) != n || SSL_write(ssl, body, (int)len) != (int)len))
		r = -EIO;
	buf = r == 0 ? malloc(REPLY_MAX + 1) : NULL;
	if (r == 0 && !buf)
		r = -ENOMEM;
	while (r == 0 && got < REPLY_MAX && (n = SSL_read(ssl, buf + got, REPLY_MAX - got)) > 0)
		got += (size_t)n;
	if (r == 0) {
		buf[got] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (!end || sscanf(buf, "HTTP/1.%*d %d", code) != 1) {
			r = -EBADMSG;
		} else {
			*reply_len = got - (size_t)(end + 4 - buf);
			*reply = malloc(*reply_len ? *reply_len : 1);
			if (*reply)
				memcpy(*reply, end + 4, *reply_len);
			else
				r = -ENOMEM;
		}
	}
	free(buf);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	if (fd >= 0)
		close(fd);
	return r;
}

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
	r = https_post(server, ca, "/v1/enroll", body, len, &code, &reply, &reply_len);
	if (r == 0)
		rr = kmemctl__v1__enroll_reply__unpack(NULL, reply_len, reply);
	if (r < 0 || !rr) {
		EVP_PKEY_free(key);
		return log_error_errno(r ?: -EBADMSG, "enrolling at %s failed: %m", server),
		       EXIT_UNREACHABLE;
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
