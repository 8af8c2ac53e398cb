#include "train/copy_check.hpp"

#include <cstring>
#include <vector>

#include "core/checksum.hpp"

namespace stoker {

uint64_t copy_check::digest_of(const image_batch& batch) noexcept {
  std::vector<uint64_t> words;
  words.reserve(batch.checksums.size() + 2 * batch.sample_ids.size() + 3);
  for (auto* part : {&batch.checksums, &batch.sample_ids}) {
    words.push_back(part->size());
    words.insert(words.end(), part->begin(), part->end());
  }
  words.push_back(batch.labels.size());
  for (auto label : batch.labels)
    words.push_back(static_cast<uint64_t>(label));
  words.push_back(batch.soft_labels.size());
  for (auto p : batch.soft_labels) {
    uint32_t bits = 0;
    std::memcpy(&bits, &p, sizeof(bits));
    words.push_back(bits);
  }
  return checksum64(words.data(), words.size() * sizeof(uint64_t));
}

void copy_check::taken(const image_batch& batch) {
  auto [at, added] = taken_.try_emplace(batch.batch_id);
  at->second = first_copy{digest_of(batch), batch.producer};
  if (!added)
    return;
  order_.push_back(batch.batch_id);
  if (order_.size() > keep_) {
    taken_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<bool> copy_check::same(const image_batch& copy,
                                     std::string* first_producer) const {
  auto at = taken_.find(copy.batch_id);
  if (at == taken_.end())
    return std::nullopt;
  if (first_producer)
    *first_producer = at->second.producer;
  return at->second.digest == digest_of(copy);
}

} // namespace stoker
