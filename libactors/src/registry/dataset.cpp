#include "stoker/dataset.hpp"

#include "stoker/counter_rng.hpp"

namespace stoker {

sample_subset::sample_subset(uint64_t total, uint64_t limit, uint64_t seed)
  : size_(limit == 0 || limit >= total ? total : limit),
    order_(total, mix64(seed ^ 0x5ab5e75ab5e7ull)),
    shuffled_(size_ < total) {
  // nop
}

} // namespace stoker
