#include "base64.h"

#include <stdint.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_encoded_len(size_t n) { return (n + 2) / 3 * 4; }

void base64_encode(const void *data, size_t n, char *out)
{
    const unsigned char *in = data;
    size_t i = 0;
    for (; i + 3 <= n; i += 3, out += 4) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[0] = alphabet[v >> 18];
        out[1] = alphabet[v >> 12 & 63];
        out[2] = alphabet[v >> 6 & 63];
        out[3] = alphabet[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        out[0] = alphabet[v >> 18];
        out[1] = alphabet[v >> 12 & 63];
        out[2] = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
        out[3] = '=';
    }
}

/* The length without its trailing '=' padding, or -1 if the padding is malformed. */
static long long unpadded_len(const char *text, size_t len)
{
    size_t pad = 0;
    while (pad < len && pad < 3 && text[len - 1 - pad] == '=') pad++;
    if (pad > 2 || (pad && len % 4)) return -1;
    return (long long)(len - pad);
}

long long base64_decoded_len(const char *text, size_t len)
{
    long long data = unpadded_len(text, len);
    /* A lone character in the last quantum carries only 6 bits: no byte. */
    if (data < 0 || data % 4 == 1) return -1;
    return data / 4 * 3 + (data % 4 ? data % 4 - 1 : 0);
}

/* sextet_of[c] is the 6-bit value of character c, or -1 outside the alphabet. */
static signed char sextet_of[256];

static void build_sextet_table(void)
{
    if (sextet_of['B'] == 1) return;
    for (int c = 0; c < 256; c++) sextet_of[c] = -1;
    for (int i = 0; i < 64; i++) sextet_of[(unsigned char)alphabet[i]] = (signed char)i;
}

int base64_decode(const char *text, size_t len, void *out)
{
    build_sextet_table();
    const unsigned char *in = (const unsigned char *)text;
    unsigned char *dst = out;
    long long data = unpadded_len(text, len);
    if (data < 0) return -1;
    uint32_t bits = 0;
    int nbits = 0;
    for (long long i = 0; i < data; i++) {
        int s = sextet_of[in[i]];
        if (s < 0) return -1;
        bits = bits << 6 | (uint32_t)s;  /* only the low nbits matter; older bits may fall off */
        nbits += 6;
        if (nbits >= 8) {
            nbits -= 8;
            *dst++ = (unsigned char)(bits >> nbits);
        }
    }
    return 0;
}
