#include "crc32c.h"

#include <pthread.h>
#include <string.h>

// Tables for the software path: table[0] is the byte-wise table of the
// reflected polynomial 0x82F63B78; table[k] advances a byte's contribution by k
// further bytes ("slicing by 8"). Built once, on first use.
static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void) {
    for (uint32_t index = 0; index < 256; index++) {
        uint32_t crc = index;
        for (int bit = 0; bit < 8; bit++) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        table[0][index] = crc;
    }
    for (uint32_t index = 0; index < 256; index++) {
        for (int k = 1; k < 8; k++) {
            uint32_t previous = table[k - 1][index];
            table[k][index] = table[0][previous & 0xFF] ^ (previous >> 8);
        }
    }
}

static uint32_t software(uint32_t crc, const unsigned char *p, size_t count) {
    pthread_once(&table_once, build_table);
    while (count >= 8) {
        uint32_t low, high;
        memcpy(&low, p, 4);
        memcpy(&high, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        low = __builtin_bswap32(low);
        high = __builtin_bswap32(high);
#endif
        low ^= crc;
        crc = table[7][low & 0xFF] ^ table[6][(low >> 8) & 0xFF] ^ table[5][(low >> 16) & 0xFF] ^ table[4][low >> 24]
            ^ table[3][high & 0xFF] ^ table[2][(high >> 8) & 0xFF] ^ table[1][(high >> 16) & 0xFF] ^ table[0][high >> 24];
        p += 8;
        count -= 8;
    }
    while (count--) crc = table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t hardware(uint32_t crc, const unsigned char *p, size_t count) {
    uint64_t crc64 = crc;
    // Four words a turn of the loop, then one at a time: a stored record
    // is a few dozen bytes, so the loop's own instructions counted.
    while (count >= 32) {
        uint64_t a, b, c, d;
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, 8);
        memcpy(&c, p + 16, 8);
        memcpy(&d, p + 24, 8);
        crc64 = __builtin_ia32_crc32di(crc64, a);
        crc64 = __builtin_ia32_crc32di(crc64, b);
        crc64 = __builtin_ia32_crc32di(crc64, c);
        crc64 = __builtin_ia32_crc32di(crc64, d);
        p += 32;
        count -= 32;
    }
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc64 = __builtin_ia32_crc32di(crc64, word);
        p += 8;
        count -= 8;
    }
    crc = (uint32_t)crc64;
    // The last 0-7 bytes as at most one 4-, one 2- and one 1-byte step (the
    // instruction takes a wider operand's bytes lowest first, as the
    // byte-wise loop would).
    if (count & 4) {
        uint32_t word;
        memcpy(&word, p, 4);
        crc = __builtin_ia32_crc32si(crc, word);
        p += 4;
    }
    if (count & 2) {
        uint16_t half;
        memcpy(&half, p, 2);
        crc = __builtin_ia32_crc32hi(crc, half);
        p += 2;
    }
    if (count & 1) crc = __builtin_ia32_crc32qi(crc, *p);
    return crc;
}
#endif

uint32_t dao_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = (const unsigned char *)bytes;
    crc = ~crc;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) return ~hardware(crc, p, count);
#endif
    return ~software(crc, p, count);
}

uint32_t dao_crc32c_update_portable(uint32_t crc, const void *bytes, size_t count) {
    return ~software(~crc, (const unsigned char *)bytes, count);
}
