#include "train/checkpoint.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <sys/stat.h>
#include <unistd.h>

#include "stoker/errors.hpp"
#include "core/atomic_file.hpp"

namespace stoker {

namespace {

// Format 2 adds a group's cursors; format 1 files still load.
constexpr char magic[8] = {'S', 'T', 'K', 'C', 'K', 'P', 'T', '2'};

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the checkpoint format assumes a little-endian host");

class writer {
public:
  template <class T>
  void put(T value) {
    auto at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &value, sizeof(T));
  }

  void put_bytes(const void* data, uint64_t size) {
    put(size);
    auto at = bytes.size();
    bytes.resize(at + size);
    if (size > 0)
      std::memcpy(bytes.data() + at, data, size);
  }

  std::string bytes;
};

class reader {
public:
  explicit reader(const std::string& bytes) : bytes_(bytes) {
    // nop
  }

  template <class T>
  bool get(T& value) {
    if (bytes_.size() - at_ < sizeof(T))
      return false;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }

  // A length-prefixed block, copied into `out` (a vector or a string).
  template <class Container>
  bool get_bytes(Container& out) {
    uint64_t size = 0;
    if (!get(size) || size > bytes_.size() - at_
        || size % sizeof(typename Container::value_type) != 0)
      return false;
    out.resize(size / sizeof(typename Container::value_type));
    if (size > 0)
      std::memcpy(out.data(), bytes_.data() + at_, size);
    at_ += size;
    return true;
  }

  bool at_end() const noexcept { return at_ == bytes_.size(); }

private:
  const std::string& bytes_;
  size_t at_ = 0;
};

} // namespace

std::string checkpoint_path(const std::string& dir) {
  return dir + "/checkpoint.stoker";
}

std::string encode_checkpoint(const checkpoint& ckpt) {
  writer w;
  w.bytes.append(magic, sizeof(magic));
  w.put(ckpt.run.dataset_size);
  w.put(ckpt.run.epochs);
  w.put(ckpt.run.batch_size);
  w.put(ckpt.run.seed);
  w.put(static_cast<uint8_t>(ckpt.run.shuffle));
  w.put(ckpt.step);
  w.put(ckpt.done_below);
  w.put_bytes(ckpt.done_ids.data(), ckpt.done_ids.size() * sizeof(uint64_t));
  w.put_bytes(ckpt.ledger_bits.data(), ckpt.ledger_bits.size());
  w.put(ckpt.delivered);
  w.put(ckpt.duplicates);
  w.put_bytes(ckpt.engine_state.data(), ckpt.engine_state.size());
  w.put(ckpt.next_seq);
  w.put(static_cast<uint64_t>(ckpt.ranks.size()));
  for (auto& r : ckpt.ranks)
    w.put_bytes(r.data(), r.size());
  return std::move(w.bytes);
}

caf::error write_checkpoint(const checkpoint& ckpt, const std::string& dir) {
  ::mkdir(dir.c_str(), 0755); // EEXIST is fine; the write reports others
  auto bytes = encode_checkpoint(ckpt);
  if (auto err = write_file_atomically(checkpoint_path(dir), bytes))
    return make_error(errc::io_failure, "checkpoint: " + describe(err));
  return caf::none;
}

caf::expected<checkpoint> read_checkpoint(const std::string& dir) {
  auto path = checkpoint_path(dir);
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return make_error(errc::io_failure,
                      "no checkpoint at " + path
                        + " (--resume needs a run that saved one: set "
                          "trainer.checkpoint-dir and "
                          "trainer.checkpoint-every)");
  std::string bytes{std::istreambuf_iterator<char>{in},
                    std::istreambuf_iterator<char>{}};
  return decode_checkpoint(bytes, path);
}

caf::expected<checkpoint> decode_checkpoint(const std::string& bytes,
                                            const std::string& path) {
  if (bytes.size() < sizeof(magic)
      || std::memcmp(bytes.data(), magic, sizeof(magic) - 1) != 0)
    return make_error(errc::io_failure, path + " is not a Stoker checkpoint");
  auto format = bytes[sizeof(magic) - 1];
  if (format != '1' && format != '2')
    return make_error(errc::io_failure,
                      path + ": checkpoint format '" + std::string(1, format)
                        + "', this release reads formats '1' and '2'");
  std::string body = bytes.substr(sizeof(magic));
  reader r{body};
  checkpoint c;
  uint8_t shuffle = 0;
  bool ok = r.get(c.run.dataset_size) && r.get(c.run.epochs)
            && r.get(c.run.batch_size) && r.get(c.run.seed) && r.get(shuffle)
            && r.get(c.step) && r.get(c.done_below) && r.get_bytes(c.done_ids)
            && r.get_bytes(c.ledger_bits) && r.get(c.delivered)
            && r.get(c.duplicates) && r.get_bytes(c.engine_state);
  if (ok && format == '2') {
    uint64_t ranks = 0;
    ok = r.get(c.next_seq) && r.get(ranks) && ranks <= (1u << 20);
    for (uint64_t k = 0; ok && k < ranks; ++k) {
      c.ranks.emplace_back();
      ok = r.get_bytes(c.ranks.back());
    }
  }
  ok = ok && r.at_end();
  if (!ok)
    return make_error(errc::io_failure,
                      path + " is truncated or damaged (" + std::to_string(
                        bytes.size())
                        + " bytes)");
  c.run.shuffle = shuffle != 0;
  auto expected_bits = (c.run.dataset_size * c.run.epochs + 7) / 8;
  if (c.ledger_bits.size() != expected_bits)
    return make_error(errc::io_failure,
                      path + ": ledger of " + std::to_string(
                        c.ledger_bits.size())
                        + " bytes, expected " + std::to_string(expected_bits));
  return c;
}

caf::error check_resumable(const run_identity& saved,
                           const run_identity& now) {
  auto differs = [](const char* key, auto was, auto is) {
    return make_error(errc::invalid_config,
                      std::string{"--resume: the checkpoint was saved with "}
                        + key + " = " + std::to_string(was)
                        + ", this run has " + std::to_string(is)
                        + "; expected the same run");
  };
  if (saved.dataset_size != now.dataset_size)
    return differs("pipeline.dataset-size", saved.dataset_size,
                   now.dataset_size);
  if (saved.epochs != now.epochs)
    return differs("pipeline.epochs", saved.epochs, now.epochs);
  if (saved.batch_size != now.batch_size)
    return differs("pipeline.batch-size", saved.batch_size, now.batch_size);
  if (saved.seed != now.seed)
    return differs("pipeline.seed", saved.seed, now.seed);
  if (saved.shuffle != now.shuffle)
    return differs("pipeline.shuffle", int{saved.shuffle}, int{now.shuffle});
  return caf::none;
}

uint32_t checkpoint_world(const checkpoint& ckpt) noexcept {
  return ckpt.ranks.empty() ? 1u : static_cast<uint32_t>(ckpt.ranks.size());
}

caf::error check_resume_world(uint32_t saved, uint32_t world,
                              const std::string& where) {
  if (saved == world)
    return caf::none;
  return make_error(
    errc::invalid_config,
    "--resume: the checkpoint " + where + " was saved by a data-parallel "
      "group of " + std::to_string(saved) + " trainer(s), this run has "
      + std::to_string(world) + "; each rank trained its own batches of a "
        "plan that depends on the group's size, so another size would train "
        "some of them twice; expected " + std::to_string(saved)
      + " trainer(s) (trainer.count, on every trainer node), or a new run "
        "without --resume");
}

} // namespace stoker
