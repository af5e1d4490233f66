/* SHA-256 of files and buffers, as lower-case hex, through OpenSSL's EVP
 * interface. Compiler identities carry the hash of the library file, and each
 * compile result the hash of the code it produced, so that two runs (or two
 * arms) can be shown to have used byte-identical inputs and outputs. */
#ifndef QUAL_SHA256_H
#define QUAL_SHA256_H

#include <stddef.h>

#include "common/err.h"

/* Room for 64 hex digits and the NUL. */
#define SHA256_HEX_SIZE 65
/* The digest's bytes. */
#define SHA256_SIZE 32

/* The SHA-256 of size bytes at data (NULL when size is 0) into md. Returns
 * 0, or QUAL_ENOMEM when OpenSSL cannot compute it. Cheap to call often:
 * the algorithm is fetched once for the process (thread-safe). */
int sha256_digest(const void *data, size_t size, unsigned char md[SHA256_SIZE]);

/* Hashes size bytes at data into hex (64 lower-case digits, NUL-terminated).
 * data may be NULL when size is 0. Returns 0, or QUAL_ENOMEM when OpenSSL
 * cannot set up a digest. */
int sha256_hash_buffer(const void *data, size_t size,
		       char hex[SHA256_HEX_SIZE], struct qual_msg *msg);

/* Hashes the contents of the file at path, reading it in blocks (compiler
 * libraries are 100 MiB and more). Returns 0, or QUAL_EIO / QUAL_ENOENT with
 * msg naming the path and the reason. */
int sha256_hash_file(const char *path, char hex[SHA256_HEX_SIZE],
		     struct qual_msg *msg);

/* Hashes what fd holds from its offset to its end, in blocks, and writes
 * each block to copy_to as well when copy_to >= 0, so that the copy holds
 * exactly the bytes hashed (compile/rtc.h pins a library that way). what
 * names the data in messages. *size (may be NULL) gets the bytes read.
 * Returns 0, or QUAL_EIO with msg naming what failed. */
int sha256_hash_fd(int fd, int copy_to, const char *what, char hex[SHA256_HEX_SIZE],
		   size_t *size, struct qual_msg *msg);

#endif
