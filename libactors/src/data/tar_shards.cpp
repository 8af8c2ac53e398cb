#include "data/tar_shards.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include <nlohmann/json.hpp>

#include "stoker/counter_rng.hpp"
#include "stoker/errors.hpp"

namespace stoker {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t block = 512;
constexpr int64_t max_label = 1'000'000; // pipeline.num-classes' ceiling

std::string errno_text(int code) {
  return std::error_code{code, std::generic_category()}.message();
}

// An open file that closes itself.
class file_handle {
public:
  explicit file_handle(const std::string& path)
    : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    // nop
  }
  file_handle(const file_handle&) = delete;
  file_handle& operator=(const file_handle&) = delete;
  ~file_handle() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  bool ok() const noexcept { return fd_ >= 0; }

  /// Reads up to `n` bytes at `offset`; returns how many it read.
  size_t read_at(char* out, size_t n, uint64_t offset) const {
    size_t got = 0;
    while (got < n) {
      auto r = ::pread(fd_, out + got, n - got,
                       static_cast<off_t>(offset + got));
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        break;
      got += static_cast<size_t>(r);
    }
    return got;
  }

private:
  int fd_;
};

bool is_image_ext(const std::string& ext) {
  for (auto known : {"jpg", "jpeg", "png", "ppm", "pgm", "pbm", "bmp", "tif",
                     "tiff", "webp"})
    if (ext == known)
      return true;
  return false;
}

// A header's numeric field: octal text, or GNU's base-256 (high bit set).
bool parse_number(const unsigned char* at, size_t len, uint64_t& out) {
  out = 0;
  if (at[0] & 0x80) {
    for (size_t i = 1; i < len; ++i) {
      if (out >> 55)
        return false;
      out = (out << 8) | at[i];
    }
    return (at[0] & 0x7f) == 0;
  }
  size_t i = 0;
  while (i < len && at[i] == ' ')
    ++i;
  bool any = false;
  for (; i < len && at[i] >= '0' && at[i] <= '7'; ++i) {
    out = out * 8 + (at[i] - '0');
    any = true;
  }
  return any || i == len || at[i] == 0;
}

std::string field(const unsigned char* at, size_t len) {
  size_t n = 0;
  while (n < len && at[n] != 0)
    ++n;
  return std::string(reinterpret_cast<const char*>(at), n);
}

uint64_t hash_text(uint64_t h, const std::string& text) {
  for (unsigned char c : text)
    h = mix64(h ^ c);
  return mix64(h ^ 0xff);
}

std::string trimmed(std::string s) {
  auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && space(s.back()))
    s.pop_back();
  size_t i = 0;
  while (i < s.size() && space(s[i]))
    ++i;
  return s.substr(i);
}

// Indexes one shard into `out`, appending its groups; stops once `out`
// holds `limit` samples (0: no limit). An error only where the shard cannot
// be read at all; damage inside it becomes samples with problems.
class shard_indexer {
public:
  shard_indexer(shard_listing& out, uint32_t shard, uint64_t limit)
    : out_(out), shard_(shard), limit_(limit) {
    // nop
  }

  caf::error run(const std::string& data) {
    auto& path = out_.shards[shard_];
    std::error_code ec;
    size_ = fs::file_size(path, ec);
    if (ec)
      return detail::shards_error(data,
                                  "shard \"" + path + "\": " + ec.message());
    file_handle file{path};
    if (!file.ok())
      return detail::shards_error(data, "shard \"" + path
                                          + "\": cannot open it: "
                                          + errno_text(errno));
    file_ = &file;
    uint64_t pos = 0;
    std::string long_name;
    bool pax_sized = false;
    uint64_t pax_size = 0;
    unsigned char h[block];
    while (!full()) {
      if (pos + block > size_) {
        if (pos < size_)
          truncated(pos, "truncated inside a tar header at byte "
                           + std::to_string(pos));
        break; // an archive without its two zero blocks still ends here
      }
      if (file.read_at(reinterpret_cast<char*>(h), block, pos) < block) {
        damaged_header(pos, size_, "cannot read the tar header at byte "
                                     + std::to_string(pos));
        break;
      }
      if (std::all_of(h, h + block, [](unsigned char c) { return c == 0; }))
        break; // the end-of-archive blocks
      uint64_t size = 0;
      if (!header_holds(h) || !parse_number(h + 124, 12, size)) {
        // As GNU tar's "skipping to next header": the blocks up to the next
        // header that holds are lost (one member, where only its header
        // was hit), the members after them are read as usual.
        auto next = next_header(pos + block);
        damaged_header(pos, next,
                       "the tar header at byte " + std::to_string(pos)
                         + (header_sum_holds(h) ? " has no readable size"
                                                : " fails its checksum")
                         + " (not a tar file, or damaged): bytes "
                         + std::to_string(pos) + " to " + std::to_string(next)
                         + " unreadable"
                         + (next < size_ ? "; indexing went on at the next "
                                           "header, at byte "
                                             + std::to_string(next)
                                         : "; no header after them"));
        pos = next;
        long_name.clear();
        pax_sized = false;
        continue;
      }
      if (pax_sized)
        size = pax_size;
      char type = static_cast<char>(h[156]);
      std::string name = long_name;
      if (name.empty()) {
        name = field(h, 100);
        auto prefix = field(h + 345, 155);
        if (std::memcmp(h + 257, "ustar", 5) == 0 && !prefix.empty())
          name = prefix + "/" + name;
      }
      uint64_t at = pos + block;
      uint64_t next = at + (size + block - 1) / block * block;
      if (size > size_ - at) { // (at <= size_: the header fit)
        auto why = "truncated: the shard ends at byte " + std::to_string(size_)
                   + ", the member " + name + " needs bytes "
                   + std::to_string(at) + " to " + std::to_string(at + size);
        if (member(name, at, size, false)) {
          current_->problem = why; // its group is cut short
          note_truncation(name);
        } else {
          truncated(pos, why);
        }
        break;
      }
      if (type == 'x' || type == 'L') {
        auto text = read_text(at, size, 1 << 20);
        if (type == 'L')
          long_name = text.c_str(); // up to its NUL
        else
          read_pax(text, long_name, pax_sized, pax_size);
      } else if (type == 'g' || type == 'K') {
        // global pax records and long link names: nothing a sample uses
      } else {
        if (type == '0' || type == '\0' || type == '7')
          member(name, at, size, true);
        long_name.clear();
        pax_sized = false;
      }
      pos = next;
    }
    flush();
    return caf::none;
  }

private:
  struct group {
    std::string key;
    std::vector<std::string> others; // members that are neither
    tar_sample sample;
    bool has_image = false;
    bool label_from_cls = false;
    std::string problem;
  };

  bool full() const {
    return limit_ > 0 && out_.samples.size() >= limit_;
  }

  std::string read_text(uint64_t at, uint64_t size, uint64_t cap) {
    std::string text(static_cast<size_t>(std::min(size, cap)), '\0');
    text.resize(file_->read_at(text.data(), text.size(), at));
    return text;
  }

  static void read_pax(const std::string& text, std::string& path,
                       bool& sized, uint64_t& size) {
    // Records: "LEN key=value\n", LEN counting the whole record.
    size_t at = 0;
    while (at < text.size()) {
      auto space = text.find(' ', at);
      if (space == std::string::npos)
        return;
      size_t len = 0;
      try {
        len = std::stoul(text.substr(at, space - at));
      } catch (const std::exception&) {
        return;
      }
      if (len == 0 || at + len > text.size())
        return;
      auto record = text.substr(space + 1, at + len - space - 2);
      auto eq = record.find('=');
      if (eq != std::string::npos) {
        auto key = record.substr(0, eq);
        auto value = record.substr(eq + 1);
        if (key == "path")
          path = value;
        else if (key == "size" && detail::all_digits(value)) {
          sized = true;
          size = std::stoull(value);
        }
      }
      at += len;
    }
  }

  // A member, grouped by key as WebDataset's group_by_keys does; false
  // where it belongs to no sample (no KEY.EXT name, or the limit is met).
  bool member(const std::string& name, uint64_t at, uint64_t size,
              bool whole) {
    auto slash = name.rfind('/');
    auto base = slash == std::string::npos ? 0 : slash + 1;
    auto dot = name.find('.', base);
    if (dot == std::string::npos || dot == base)
      return false; // no KEY.EXT: WebDataset leaves it out too
    auto key = name.substr(0, dot);
    auto ext = name.substr(dot + 1);
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (!current_ || current_->key != key) {
      flush();
      if (full())
        return false;
      current_ = group{};
      current_->key = key;
      current_->sample.member = key;
    }
    auto& g = *current_;
    if (!whole)
      return true; // the caller says what is wrong with it
    // "jpg", or the last part of "seg.png": what a decoder would go by.
    auto last = ext.substr(ext.rfind('.') == std::string::npos
                             ? 0
                             : ext.rfind('.') + 1);
    if (is_image_ext(last) && !g.has_image) {
      g.has_image = true;
      g.sample.offset = at;
      g.sample.size = size;
      g.sample.member = name;
    } else if (ext == "cls" || (ext == "json" && !g.label_from_cls)) {
      auto text = trimmed(read_text(at, size, 1 << 20));
      if (ext == "cls") {
        g.label_from_cls = true;
        bool ok = detail::all_digits(text);
        g.sample.label = ok ? static_cast<int64_t>(std::stoull(text)) : -1;
        if (!ok)
          g.problem = name + " holds \"" + text.substr(0, 40)
                      + "\"; expected a class number >= 0";
      } else {
        auto json = nlohmann::json::parse(text, nullptr, false);
        const nlohmann::json* label = nullptr;
        if (json.is_object())
          for (auto k : {"label", "cls"})
            if (json.contains(k) && json[k].is_number_integer()
                && json[k].get<int64_t>() >= 0) {
              label = &json[k];
              break;
            }
        if (label)
          g.sample.label = label->get<int64_t>();
        else
          g.problem = name + ": expected a JSON object with an integer "
                             "\"label\" (or \"cls\") >= 0";
      }
    } else {
      g.others.push_back(name);
    }
    return true;
  }

  static bool header_sum_holds(const unsigned char* h) {
    uint64_t sum = 0;
    uint64_t stored = 0;
    for (size_t i = 0; i < block; ++i)
      sum += (i >= 148 && i < 156) ? ' ' : h[i];
    return parse_number(h + 148, 8, stored) && stored == sum;
  }

  static bool header_holds(const unsigned char* h) {
    uint64_t size = 0;
    return header_sum_holds(h) && parse_number(h + 124, 12, size);
  }

  // The first block at or after `from` that is a tar header whose checksum
  // and size hold, or the shard's end. A member's data block passing both
  // by chance is as unlikely as it is for GNU tar, which resyncs alike.
  uint64_t next_header(uint64_t from) const {
    unsigned char h[block];
    for (auto at = from; at + block <= size_; at += block) {
      if (file_->read_at(reinterpret_cast<char*>(h), block, at) < block)
        break;
      if (!std::all_of(h, h + block, [](unsigned char c) { return c == 0; })
          && header_holds(h))
        return at;
    }
    return size_;
  }

  // Damage at a header (bytes `pos` to `next`): the open group is whole;
  // the damaged blocks become one sample named by their byte range, so the
  // report counts them each epoch, and the listing says where they were.
  void damaged_header(uint64_t pos, uint64_t next, const std::string& why) {
    flush();
    out_.damage.push_back(shard_name() + ": " + why);
    if (full())
      return;
    current_ = group{};
    current_->key = current_->sample.member =
      "(bytes " + std::to_string(pos) + "-" + std::to_string(next) + ")";
    current_->problem = why;
  }

  // The shard ends inside a header (at `pos`): a sample named by the byte,
  // and the listing says the shard is truncated.
  void truncated(uint64_t pos, const std::string& why) {
    flush();
    note_truncation("a tar header");
    if (full())
      return;
    current_ = group{};
    current_->key = current_->sample.member =
      "(byte " + std::to_string(pos) + ")";
    current_->problem = why;
  }

  void note_truncation(const std::string& inside) {
    // The open group (the cut one) is not flushed yet: what came before
    // it is whole.
    out_.damage.push_back(shard_name() + ": truncated: the shard ends at byte "
                          + std::to_string(size_) + ", inside " + inside
                          + "; " + std::to_string(out_.counts[shard_])
                          + " sample(s) indexed before the cut, any after "
                            "it are lost");
  }

  std::string shard_name() const { return out_.shards[shard_]; }

  void flush() {
    if (!current_)
      return;
    auto g = std::move(*current_);
    current_.reset();
    if (full())
      return;
    if (g.problem.empty() && !g.has_image) {
      std::string names;
      for (auto& n : g.others)
        names += (names.empty() ? "" : ", ") + n;
      g.problem = "no image member (jpg, png, ...) under the key \"" + g.key
                  + "\"" + (names.empty() ? "" : "; it holds " + names);
    }
    if (g.problem.empty() && g.sample.label >= max_label)
      g.problem = "label " + std::to_string(g.sample.label) + " of "
                  + g.sample.member + "; expected a class number below "
                  + std::to_string(max_label);
    if (g.problem.empty() && g.sample.label < 0)
      g.problem = "no label for " + g.sample.member + "; expected " + g.key
                  + ".cls or " + g.key + ".json with \"label\"";
    g.sample.shard = shard_;
    auto index = out_.samples.size();
    if (!g.problem.empty())
      out_.problems.emplace(index, std::move(g.problem));
    else
      out_.num_classes = std::max(out_.num_classes,
                                  static_cast<uint32_t>(g.sample.label + 1));
    out_.samples.push_back(std::move(g.sample));
    ++out_.counts[shard_];
  }

  shard_listing& out_;
  uint32_t shard_;
  uint64_t limit_;
  uint64_t size_ = 0;
  const file_handle* file_ = nullptr;
  std::optional<group> current_;
};

} // namespace

caf::expected<shard_listing> list_tar_shards(const std::string& data,
                                             uint64_t limit) {
  auto shards = expand_shards(data);
  if (!shards)
    return std::move(shards.error());
  shard_listing out;
  uint64_t h = 0;
  for (auto& path : *shards) {
    if (limit > 0 && out.samples.size() >= limit)
      break;
    auto shard = static_cast<uint32_t>(out.shards.size());
    out.shards.push_back(path);
    out.counts.push_back(0);
    auto first = out.samples.size();
    if (auto err = shard_indexer{out, shard, limit}.run(data))
      return err;
    std::error_code ec;
    h = hash_text(h, fs::path{path}.filename().string() + ":"
                       + std::to_string(fs::file_size(path, ec)));
    for (auto i = first; i < out.samples.size(); ++i)
      h = hash_text(h, out.samples[i].member);
  }
  if (out.samples.size() == out.problems.size())
    return detail::shards_error(
      data, std::to_string(out.shards.size())
              + " shard(s) and no readable sample in them"
              + (out.problems.empty()
                   ? std::string{}
                   : " (the first: " + tar_sample_name(out, 0) + ": "
                       + out.problems.at(0) + ")")
              + "; expected KEY.jpg (or png, ...) with KEY.cls members");
  char text[20];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(h));
  out.fingerprint = text;
  return out;
}

std::string tar_sample_name(const shard_listing& listing, uint64_t index) {
  auto& s = listing.samples[index];
  return listing.shards[s.shard] + ":" + s.member;
}

caf::expected<std::vector<char>> read_tar_sample(const shard_listing& listing,
                                                 uint64_t index) {
  if (auto it = listing.problems.find(index); it != listing.problems.end())
    return make_error(errc::io_failure,
                      tar_sample_name(listing, index) + ": " + it->second);
  auto& s = listing.samples[index];
  auto& path = listing.shards[s.shard];
  file_handle file{path};
  if (!file.ok())
    return make_error(errc::io_failure,
                      path + ": cannot open it: " + errno_text(errno));
  std::vector<char> bytes(static_cast<size_t>(s.size));
  auto got = file.read_at(bytes.data(), bytes.size(), s.offset);
  if (got < bytes.size())
    return make_error(errc::io_failure,
                      tar_sample_name(listing, index) + ": read "
                        + std::to_string(got) + " of "
                        + std::to_string(s.size) + " bytes at byte "
                        + std::to_string(s.offset)
                        + " (the shard changed since it was indexed?)");
  return bytes;
}

} // namespace stoker
