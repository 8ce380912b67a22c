/* ProcessPrng for Wine builds that lack bcryptprimitives.dll (Debian's Wine
 * 8.0): Rust's std draws its random bytes from it on Windows. Built at test
 * time by tests/tests/windows_wine.rs and placed in the test's WINEPREFIX;
 * the bytes come from RtlGenRandom (advapi32's SystemFunction036). */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
