/* SPDX-License-Identifier: BSD-3-Clause */
/* rcc_text_escape() over peer bytes: never writes past its buffer, always
 * terminates, and what it writes holds no control character. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "rcc/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[256];
	size_t dstlen = size ? 1 + data[0] % sizeof(out) : sizeof(out);
	size_t n = rcc_text_escape(out, dstlen, data, size);

	if (n >= dstlen || out[n] != 0 || strlen(out) != n)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			abort();
	return 0;
}
