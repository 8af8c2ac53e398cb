#pragma once

// What this machine has, and bytes as people read them.

#include <cstdint>
#include <string>

namespace stoker {

/// The physical memory of this machine in bytes (0 if the system cannot
/// say): a batch larger than this can never be made here.
uint64_t physical_memory_bytes() noexcept;

/// Minor page faults the calling thread has taken so far (getrusage's
/// RUSAGE_THREAD; 0 if the system cannot say). A 38.5 MB buffer touched
/// for the first time costs ~9,400 of them in 4 KiB pages.
uint64_t thread_minor_faults() noexcept;

/// Makes the allocator keep memory a thread frees for its next
/// allocations (glibc: no trimming of the heap below 256 MiB, mmap only
/// from 32 MiB): an image chain allocates and frees images of hundreds of
/// KB per sample, and every page handed back to the system faults again
/// on the next sample (on this VM the ImageNet-style JPEG chain ran at 650
/// images/s per worker with glibc's defaults, 1,025 with these). Call once
/// at the start of a node process, before its threads start.
void keep_freed_memory() noexcept;

/// How many of a thread's first batches count as warm-up, not steady
/// state, when faults per batch are measured (buffers and scratch are
/// created then).
constexpr uint64_t warmup_batches = 3;

/// The calling process's CPU time (user + system, every thread) since the
/// library was loaded, its child processes' included (a Python stage's
/// interpreters, live or ended), seconds; 0 if the system cannot say. Measured over
/// the same span as process_wall_seconds, so their ratio is the share of
/// one core the process used.
double process_cpu_seconds() noexcept;

/// Seconds since the library was loaded into the calling process (a
/// stoker-node's start), on the steady clock.
double process_wall_seconds() noexcept;

/// Cores this machine has (at least 1).
uint32_t machine_cores() noexcept;

/// Bytes with a binary unit: 1536 -> "1.5 KiB", 38535168 -> "36.8 MiB".
std::string human_bytes(uint64_t bytes);

} // namespace stoker
