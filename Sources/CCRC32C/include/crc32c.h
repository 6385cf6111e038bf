#ifndef DAO_CRC32C_H
#define DAO_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/// Continues the CRC-32C (Castagnoli) `crc` of the bytes before over `count`
/// bytes at `bytes`: the SSE 4.2 `crc32` instruction where the CPU has it,
/// eight table lookups per 8 bytes otherwise.
uint32_t dao_crc32c_update(uint32_t crc, const void *bytes, size_t count);

/// The same, always by table lookups (for tests of that path on CPUs that
/// take the other).
uint32_t dao_crc32c_update_portable(uint32_t crc, const void *bytes, size_t count);

#endif
