/*
 * A stand-in for bcryptprimitives.dll under Wine 8, which lacks
 * ProcessPrng: Rust's standard library imports it on Windows, so no Rust
 * program starts under Wine 8 without it. It fills the buffer from
 * RtlGenRandom (SystemFunction036 in advapi32), which Wine has.
 * Built by .ci/windows with mingw-w64; never used on real Windows.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
