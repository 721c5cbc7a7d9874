/* SPDX-License-Identifier: BSD-3-Clause */
/* The libFuzzer entry point each target defines, and its seed writer. */
#ifndef RCC_FUZZ_H
#define RCC_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
