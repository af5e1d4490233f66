#include "common/sha256.h"

#include <errno.h>
#include <fcntl.h>
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

int sha256_hash_buffer(const void *data, size_t size,
		       char hex[SHA256_HEX_SIZE], struct qual_msg *msg)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	static const unsigned char empty[1];

	if (!EVP_Digest(data ? data : empty, size, md, &n, EVP_sha256(), NULL))
		return qual_fail(msg, QUAL_ENOMEM, "cannot compute sha-256 of %zu bytes",
				 size);
	hex_encode(md, n, hex);
	return 0;
}

int sha256_hash_file(const char *path, char hex[SHA256_HEX_SIZE],
		     struct qual_msg *msg)
{
	unsigned char buf[SHA256_BLOCK];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	EVP_MD_CTX *ctx = NULL;
	int fd = -1;
	int rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		rc = qual_fail(msg, e == ENOENT ? QUAL_ENOENT : QUAL_EIO,
			       "cannot open '%s': %s", path, strerror(e));
		goto out;
	}
	ctx = EVP_MD_CTX_new();
	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		rc = qual_fail(msg, QUAL_ENOMEM, "cannot compute sha-256 of '%s'", path);
		goto out;
	}
	for (;;) {
		/* fs_read_full: short only at the end of the file. */
		ssize_t got = fs_read_full(fd, buf, sizeof buf);
		if (got < 0) {
			rc = qual_fail(msg, QUAL_EIO, "cannot read '%s': %s", path,
				       strerror(errno));
			goto out;
		}
		if (got > 0 && !EVP_DigestUpdate(ctx, buf, (size_t)got)) {
			rc = qual_fail(msg, QUAL_ENOMEM, "cannot compute sha-256 of '%s'",
				       path);
			goto out;
		}
		if ((size_t)got < sizeof buf)
			break;
	}
	if (!EVP_DigestFinal_ex(ctx, md, &n)) {
		rc = qual_fail(msg, QUAL_ENOMEM, "cannot compute sha-256 of '%s'", path);
		goto out;
	}
	hex_encode(md, n, hex);
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	if (fd >= 0)
		close(fd);
	return rc;
}
