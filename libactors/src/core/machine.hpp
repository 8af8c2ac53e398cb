#pragma once

// What this machine has, and bytes as people read them.

#include <cstdint>
#include <string>

namespace stoker {

/// The physical memory of this machine in bytes (0 if the system cannot
/// say): a batch larger than this can never be made here.
uint64_t physical_memory_bytes() noexcept;

/// Bytes with a binary unit: 1536 -> "1.5 KiB", 38535168 -> "36.8 MiB".
std::string human_bytes(uint64_t bytes);

} // namespace stoker
