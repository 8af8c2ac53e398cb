#include "core/batch_id_set.hpp"

namespace stoker {

bool batch_id_set::insert(uint64_t id) {
  if (contains(id))
    return false;
  above_.insert(id);
  // Fold the run of ids just above the watermark into it.
  for (auto i = above_.begin(); i != above_.end() && *i == watermark_;
       i = above_.erase(i))
    ++watermark_;
  return true;
}

std::vector<uint64_t> batch_id_set::sparse() const {
  return {above_.begin(), above_.end()};
}

void batch_id_set::restore(uint64_t watermark,
                           const std::vector<uint64_t>& ids) {
  watermark_ = watermark;
  above_.clear();
  for (auto id : ids)
    insert(id);
}

bool batch_id_set::contains(uint64_t id) const {
  return id < watermark_ || above_.count(id) > 0;
}

} // namespace stoker
