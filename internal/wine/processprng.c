/*
 * bcryptprimitives.dll for Wine 8.0, which lacks it: Go >= 1.24 Windows binaries take their
 * random bytes from bcryptprimitives!ProcessPrng, and exit at start when it is missing. This
 * stand-in exports ProcessPrng on top of BCryptGenRandom, which Wine has. It is installed in
 * the Wine prefix's system32 (the Go runtime loads it with LOAD_LIBRARY_SEARCH_SYSTEM32).
 * Built by test-windows.sh; never shipped.
 */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, data, n, BCRYPT_USE_SYSTEM_PREFERRED_RNG)))
			return FALSE; /* the Go runtime treats this as fatal, as on Windows */
		data += n;
		len -= n;
	}
	return TRUE;
}
