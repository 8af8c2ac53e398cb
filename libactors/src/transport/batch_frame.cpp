#include "transport/batch_frame.hpp"

#include <cstring>
#include <limits>
#include <sstream>
#include <string>

#include "stoker/errors.hpp"

namespace stoker {

namespace {

// Little-endian on every host: this machine's order (x86-64, aarch64) is
// little-endian, which the static_assert below pins down.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the batch frame codec assumes a little-endian host");

template <class T>
void put(std::vector<char>& out, T value) {
  auto at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

template <class T>
void put_all(std::vector<char>& out, const std::vector<T>& values) {
  auto at = out.size();
  out.resize(at + values.size() * sizeof(T));
  if (!values.empty())
    std::memcpy(out.data() + at, values.data(), values.size() * sizeof(T));
}

// Reads fields off a header, refusing to run past its end.
class reader {
public:
  reader(const char* at, size_t left) : at_(at), left_(left) {
    // nop
  }

  template <class T>
  bool get(T& value) {
    if (left_ < sizeof(T))
      return false;
    std::memcpy(&value, at_, sizeof(T));
    at_ += sizeof(T);
    left_ -= sizeof(T);
    return true;
  }

  template <class T>
  bool get_all(std::vector<T>& values, size_t count) {
    if (count > left_ / sizeof(T))
      return false;
    values.resize(count);
    if (count > 0)
      std::memcpy(values.data(), at_, count * sizeof(T));
    at_ += count * sizeof(T);
    left_ -= count * sizeof(T);
    return true;
  }

  bool get_string(std::string& value, size_t count) {
    if (count > left_)
      return false;
    value.assign(at_, count);
    at_ += count;
    left_ -= count;
    return true;
  }

  size_t left() const noexcept {
    return left_;
  }

private:
  const char* at_;
  size_t left_;
};

caf::error bad_frame(const std::string& what) {
  return make_error(errc::bad_batch, "batch stream: " + what);
}

} // namespace

void encode_frame_head(const image_batch& batch, std::vector<char>& out) {
  out.clear();
  out.resize(frame_prefix_bytes);
  put(out, batch.epoch);
  put(out, batch.batch_id);
  put(out, static_cast<uint8_t>(batch.type));
  put(out, static_cast<uint8_t>(batch.order));
  put(out, batch.height);
  put(out, batch.width);
  put(out, batch.channels);
  put(out, static_cast<uint32_t>(batch.sample_ids.size()));
  put_all(out, batch.sample_ids);
  put(out, static_cast<uint32_t>(batch.labels.size()));
  put_all(out, batch.labels);
  put(out, static_cast<uint32_t>(batch.checksums.size()));
  put_all(out, batch.checksums);
  auto name = batch.producer.substr(0, std::numeric_limits<uint16_t>::max());
  put(out, static_cast<uint16_t>(name.size()));
  out.insert(out.end(), name.begin(), name.end());
  put(out, static_cast<uint8_t>(batch.part));
  put(out, batch.slot.rank);
  put(out, batch.slot.seq);
  put(out, batch.slot.padded);
  put(out, static_cast<uint8_t>(batch.slot.phase_end));
  put(out, static_cast<uint32_t>(batch.skipped_ids.size()));
  put_all(out, batch.skipped_ids);
  for (auto* texts : {&batch.skipped_names, &batch.skipped_sources}) {
    put(out, static_cast<uint32_t>(texts->size()));
    for (auto& skipped : *texts) {
      auto text = skipped.substr(0, std::numeric_limits<uint16_t>::max());
      put(out, static_cast<uint16_t>(text.size()));
      out.insert(out.end(), text.begin(), text.end());
    }
  }
  put(out, batch.label_classes);
  put(out, static_cast<uint32_t>(batch.soft_labels.size()));
  put_all(out, batch.soft_labels);
  // The prefix last, now that the header's size is known.
  auto header = static_cast<uint32_t>(out.size() - frame_prefix_bytes);
  auto data = static_cast<uint64_t>(batch.data.size());
  uint16_t reserved = 0;
  auto* p = out.data();
  std::memcpy(p, &frame_magic, 4);
  std::memcpy(p + 4, &frame_version, 2);
  std::memcpy(p + 6, &reserved, 2);
  std::memcpy(p + 8, &header, 4);
  std::memcpy(p + 12, &data, 8);
}

caf::expected<frame_prefix> parse_frame_prefix(const char* bytes,
                                               uint64_t max_data_bytes) {
  uint32_t magic = 0;
  uint16_t version = 0;
  frame_prefix result;
  std::memcpy(&magic, bytes, 4);
  std::memcpy(&version, bytes + 4, 2);
  std::memcpy(&result.header_bytes, bytes + 8, 4);
  std::memcpy(&result.data_bytes, bytes + 12, 8);
  if (magic != frame_magic) {
    std::ostringstream what;
    what << "the peer does not speak Stoker's batch protocol (first bytes 0x"
         << std::hex << magic << ", expected 0x" << frame_magic << " \"STKB\")";
    return bad_frame(what.str());
  }
  if (version != frame_version)
    return bad_frame("the peer speaks batch protocol version "
                     + std::to_string(version) + ", this node speaks version "
                     + std::to_string(frame_version)
                     + " (run the same Stoker release on every node)");
  if (result.header_bytes > max_frame_header_bytes)
    return bad_frame("header of " + std::to_string(result.header_bytes)
                     + " bytes, expected at most "
                     + std::to_string(max_frame_header_bytes));
  if (result.data_bytes > max_data_bytes)
    return bad_frame("batch of " + std::to_string(result.data_bytes)
                     + " bytes, expected at most "
                     + std::to_string(max_data_bytes)
                     + " (the run's largest batch)");
  return result;
}

caf::error decode_frame_header(const char* header, uint32_t header_bytes,
                               uint64_t data_bytes, image_batch& batch) {
  reader in{header, header_bytes};
  batch.verified_here = false; // not until its images are compared
  uint8_t type = 0, order = 0;
  uint32_t count = 0;
  auto truncated = [&](const char* field) {
    return bad_frame("header of " + std::to_string(header_bytes)
                     + " bytes ends inside field '" + field + "'");
  };
  if (!in.get(batch.epoch) || !in.get(batch.batch_id) || !in.get(type)
      || !in.get(order) || !in.get(batch.height) || !in.get(batch.width)
      || !in.get(batch.channels))
    return truncated("shape");
  if (type < 1 || type > 3)
    return bad_frame("dtype tag " + std::to_string(type)
                     + ", expected 1 (float32), 2 (float16) or 3 (bfloat16)");
  if (order < 1 || order > 2)
    return bad_frame("layout tag " + std::to_string(order)
                     + ", expected 1 (hwc) or 2 (chw)");
  batch.type = static_cast<dtype>(type);
  batch.order = static_cast<layout>(order);
  if (!in.get(count) || !in.get_all(batch.sample_ids, count))
    return truncated("sample_ids");
  if (!in.get(count) || !in.get_all(batch.labels, count))
    return truncated("labels");
  if (!in.get(count) || !in.get_all(batch.checksums, count))
    return truncated("checksums");
  uint16_t name = 0;
  if (!in.get(name) || !in.get_string(batch.producer, name))
    return truncated("producer");
  uint8_t part = 0;
  if (!in.get(part))
    return truncated("split");
  if (part > 1)
    return bad_frame("split tag " + std::to_string(part)
                     + ", expected 0 (train) or 1 (test)");
  batch.part = static_cast<split>(part);
  uint8_t phase_end = 0;
  if (!in.get(batch.slot.rank) || !in.get(batch.slot.seq)
      || !in.get(batch.slot.padded) || !in.get(phase_end))
    return truncated("slot");
  if (phase_end > 1)
    return bad_frame("phase-end flag " + std::to_string(phase_end)
                     + ", expected 0 or 1");
  batch.slot.phase_end = phase_end == 1;
  if (!in.get(count) || !in.get_all(batch.skipped_ids, count))
    return truncated("skipped_ids");
  for (auto [texts, what] :
       {std::pair{&batch.skipped_names, "skipped_names"},
        std::pair{&batch.skipped_sources, "skipped_sources"}}) {
    if (!in.get(count) || count > batch.skipped_ids.size())
      return truncated(what);
    texts->resize(count);
    for (auto& text : *texts)
      if (!in.get(name) || !in.get_string(text, name))
        return truncated(what);
  }
  if (!in.get(batch.label_classes) || !in.get(count)
      || !in.get_all(batch.soft_labels, count))
    return truncated("soft_labels");
  if (in.left() != 0)
    return bad_frame(std::to_string(in.left())
                     + " stray bytes after the header's last field");
  // The shape is checked against the run by check_batch(); here only that
  // the data the frame announces is the data the header describes, with
  // overflow checks so no shape can wrap around to a small product.
  uint64_t expected = batch.sample_ids.size();
  bool wrapped = false;
  for (uint64_t factor : {uint64_t{batch.height}, uint64_t{batch.width},
                          uint64_t{batch.channels},
                          uint64_t{dtype_size(batch.type)}})
    wrapped |= __builtin_mul_overflow(expected, factor, &expected);
  if (wrapped || expected != data_bytes)
    return bad_frame("frame carries " + std::to_string(data_bytes)
                     + " data bytes, but its header describes "
                     + std::to_string(batch.sample_ids.size()) + " images of "
                     + std::to_string(batch.height) + "x"
                     + std::to_string(batch.width) + "x"
                     + std::to_string(batch.channels) + " "
                     + to_string(batch.type));
  return caf::none;
}

} // namespace stoker
