#include "common/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/fsutil.h"

/* Read block for files: large enough that a 100 MiB library is a few hundred
 * reads, small enough to live on the stack. */
#define SHA256_BLOCK (64 * 1024)

static void hex_encode(const unsigned char *md, unsigned n,
		       char hex[SHA256_HEX_SIZE])
{
	static const char digits[] = "0123456789abcdef";
	unsigned i;

	for (i = 0; i < n && i < 32; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[2 * i] = '\0';
}

/* SHA-256 fetched once for the process: EVP_sha256() in a digest call makes
 * OpenSSL fetch the algorithm anew each time, under a lock, which cost a
 * third of quald's time checking its log records (perf, 64 shows at once). */
static EVP_MD *fetched;
static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;

static void fetch_sha256(void)
{
	fetched = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static const EVP_MD *sha256_md(void)
{
	pthread_once(&fetch_once, fetch_sha256);
	return fetched ? fetched : EVP_sha256();
}

int sha256_digest(const void *data, size_t size, unsigned char md[SHA256_SIZE])
{
	static const unsigned char empty[1];
	unsigned n = 0;

	return EVP_Digest(data ? data : empty, size, md, &n, sha256_md(), NULL) &&
	       n == SHA256_SIZE ? 0 : QUAL_ENOMEM;
}

int sha256_hash_buffer(const void *data, size_t size,
		       char hex[SHA256_HEX_SIZE], struct qual_msg *msg)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = SHA256_SIZE;

	if (sha256_digest(data, size, md) < 0)
		return qual_fail(msg, QUAL_ENOMEM, "cannot compute sha-256 of %zu bytes",
				 size);
	hex_encode(md, n, hex);
	return 0;
}

int sha256_hash_fd(int fd, int copy_to, const char *what, char hex[SHA256_HEX_SIZE],
		   size_t *size, struct qual_msg *msg)
{
	unsigned char buf[SHA256_BLOCK];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	size_t total = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int rc;

	if (!ctx || !EVP_DigestInit_ex(ctx, sha256_md(), NULL)) {
		rc = qual_fail(msg, QUAL_ENOMEM, "cannot compute sha-256 of '%s'", what);
		goto out;
	}
	for (;;) {
		/* fs_read_full: short only at the end of the file. */
		ssize_t got = fs_read_full(fd, buf, sizeof buf);
		if (got < 0) {
			rc = qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", what,
				       strerror(errno));
			goto out;
		}
		if (got > 0 && !EVP_DigestUpdate(ctx, buf, (size_t)got)) {
			rc = qual_fail(msg, QUAL_ENOMEM, "cannot compute sha-256 of '%s'",
				       what);
			goto out;
		}
		if (got > 0 && copy_to >= 0 && fs_write_all(copy_to, buf, (size_t)got) < 0) {
			rc = qual_fail(msg, QUAL_EIO, "cannot copy '%s': %s", what,
				       strerror(errno));
			goto out;
		}
		total += (size_t)got;
		if ((size_t)got < sizeof buf)
			break;
	}
	if (!EVP_DigestFinal_ex(ctx, md, &n)) {
		rc = qual_fail(msg, QUAL_ENOMEM, "cannot compute sha-256 of '%s'", what);
		goto out;
	}
	hex_encode(md, n, hex);
	if (size)
		*size = total;
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	return rc;
}

int sha256_hash_file(const char *path, char hex[SHA256_HEX_SIZE],
		     struct qual_msg *msg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc;

	if (fd < 0) {
		int e = errno;
		return qual_fail(msg, e == ENOENT ? QUAL_ENOENT : QUAL_EIO,
				 "cannot open '%s': %s", path, strerror(e));
	}
	rc = sha256_hash_fd(fd, -1, path, hex, NULL, msg);
	close(fd);
	return rc;
}
