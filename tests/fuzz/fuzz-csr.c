// SPDX-License-Identifier: GPL-2.0
/*
 * Enrollment requests as kmemd's /v1/enroll takes them: an EnrollRequest
 * protobuf whose csr_pem is read by pki_read_csr(). The input is a DER
 * CSR when it starts like one (0x30, a field no EnrollRequest has), so
 * the fuzzer works on the structure rather than on base64; else an
 * EnrollRequest with a csr_pem; else PEM text. A CSR that parses but
 * does not verify is signed again with a fixed test key and read once
 * more, so the checks behind its signature are reached too.
 */
#include <errno.h>
#include <openssl/pem.h>
#include <string.h>

#include "fuzz.h"
#include "kmemctl/v1/enroll.pb-c.h"
#include "pki.h"

static const uint8_t test_seed[32] = {
	0x6b, 0x6d, 0x65, 0x6d, 0x63, 0x74, 0x6c, 0x2d, 0x66, 0x75, 0x7a,
	0x7a, 0x2d, 0x63, 0x73, 0x72, 0x2d, 0x74, 0x65, 0x73, 0x74, 0x2d,
	0x6b, 0x65, 0x79, 0x2d, 0x6e, 0x6f, 0x74, 0x2d, 0x69, 0x74,
};

/* PEM text of BIO b, malloc'ed and NUL-terminated. */
static char *bio_string(BIO *b, size_t *len)
{
	char *mem, *s;
	long n = BIO_get_mem_data(b, &mem);

	FUZZ_CHECK(n >= 0);
	s = malloc((size_t)n + 1);
	FUZZ_CHECK(s);
	memcpy(s, mem, (size_t)n);
	s[n] = '\0';
	*len = (size_t)n;
	return s;
}

static char *der_to_pem(const uint8_t *der, size_t size, size_t *len)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *s;

	FUZZ_CHECK(b);
	FUZZ_CHECK(PEM_write_bio(b, "CERTIFICATE REQUEST", "", der, (long)size) > 0 || !size);
	s = bio_string(b, len);
	BIO_free(b);
	return s;
}

static int read_csr(const char *pem, size_t len)
{
	char cn[65];
	EVP_PKEY *pub = NULL;
	int r = pki_read_csr(pem, len, &pub, cn);

	FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -EINVAL);
	if (r == 0) {
		FUZZ_CHECK(pub);
		FUZZ_CHECK(cn[0] && strlen(cn) < 64);
		EVP_PKEY_free(pub);
	}
	return r;
}

/* The CSR in pem, with the test key as its key and signer, read again. */
static void read_resigned(const char *pem, size_t len)
{
	static EVP_PKEY *key;
	BIO *in = BIO_new_mem_buf(pem, (int)len), *out;
	X509_REQ *req = in ? PEM_read_bio_X509_REQ(in, NULL, NULL, NULL) : NULL;
	size_t n;
	char *s;

	if (!key)
		key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, test_seed,
						   sizeof(test_seed));
	FUZZ_CHECK(key);
	if (req && X509_REQ_set_pubkey(req, key) && X509_REQ_sign(req, key, NULL) > 0) {
		out = BIO_new(BIO_s_mem());
		FUZZ_CHECK(out);
		if (PEM_write_bio_X509_REQ(out, req)) {
			s = bio_string(out, &n);
			read_csr(s, n);
			free(s);
		}
		BIO_free(out);
	}
	X509_REQ_free(req);
	BIO_free(in);
}

static void check_pem(const char *pem, size_t len)
{
	if (read_csr(pem, len) == -EBADMSG)
		read_resigned(pem, len);
}

/*
 * Packing what was unpacked gives a message that packs the same again.
 * It may not unpack at all: protobuf-c takes field number 0 in a tag of
 * two bytes as an unknown field, packs it in one byte and then refuses it
 * (in the corpus: csr/field-zero). kmemd never packs a request again.
 */
static void check_repack(const Kmemctl__V1__EnrollRequest *req)
{
	size_t len = kmemctl__v1__enroll_request__get_packed_size(req), len2;
	uint8_t *buf = malloc(len ? len : 1), *buf2;
	Kmemctl__V1__EnrollRequest *again;

	FUZZ_CHECK(buf);
	FUZZ_CHECK(kmemctl__v1__enroll_request__pack(req, buf) == len);
	again = kmemctl__v1__enroll_request__unpack(NULL, len, buf);
	if (!again) {
		free(buf);
		return;
	}
	len2 = kmemctl__v1__enroll_request__get_packed_size(again);
	buf2 = malloc(len2 ? len2 : 1);
	FUZZ_CHECK(buf2);
	FUZZ_CHECK(kmemctl__v1__enroll_request__pack(again, buf2) == len2);
	FUZZ_CHECK(len == len2 && !memcmp(buf, buf2, len));
	kmemctl__v1__enroll_request__free_unpacked(again, NULL);
	free(buf);
	free(buf2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Kmemctl__V1__EnrollRequest *req;
	size_t len;
	char *pem;

	if (size && data[0] == 0x30) {
		pem = der_to_pem(data, size, &len);
		check_pem(pem, len);
		free(pem);
		return 0;
	}
	req = kmemctl__v1__enroll_request__unpack(NULL, size, data);
	if (req) {
		check_repack(req);
		check_pem(req->csr_pem, strlen(req->csr_pem));
		kmemctl__v1__enroll_request__free_unpacked(req, NULL);
		return 0;
	}
	pem = strndup((const char *)data, size);
	FUZZ_CHECK(pem);
	check_pem(pem, strlen(pem));
	free(pem);
	return 0;
}
