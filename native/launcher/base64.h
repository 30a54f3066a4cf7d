/* Standard base64 (RFC 4648 alphabet), the encoding of tensors in the protocol. */
#ifndef ACL_LAUNCHER_BASE64_H
#define ACL_LAUNCHER_BASE64_H

#include <stddef.h>

/* Characters base64_encode writes for n bytes, padding included. */
size_t base64_encoded_len(size_t n);
/* Writes base64_encoded_len(n) characters, padded with '=', not NUL-terminated. */
void base64_encode(const void *data, size_t n, char *out);

/* The number of bytes text[0, len) decodes to, or -1 when its length or
 * padding is impossible for base64.  Padding is optional. */
long long base64_decoded_len(const char *text, size_t len);
/* Decodes into out, which has room for base64_decoded_len(text, len) bytes;
 * -1 at the first character outside the alphabet. */
int base64_decode(const char *text, size_t len, void *out);

#endif
