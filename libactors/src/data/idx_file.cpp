#include "data/idx_file.hpp"

#include <memory>

#include <zlib.h>

#include "stoker/errors.hpp"

namespace stoker {

namespace {

// Elements at most: far above any real dataset (Fashion-MNIST's training
// images are 47 M), low enough that a lying header cannot exhaust memory.
constexpr uint64_t max_elements = uint64_t{1} << 34;

struct gz_closer {
  void operator()(gzFile_s* f) const noexcept {
    gzclose(f);
  }
};
using gz_file = std::unique_ptr<gzFile_s, gz_closer>;

caf::error bad(const std::string& path, const std::string& what) {
  return make_error(errc::invalid_config, "IDX file " + path + ": " + what);
}

uint32_t big_endian(const unsigned char* p) noexcept {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16)
         | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Opens `path` (gzip or plain: zlib reads both) and reads the header.
caf::expected<gz_file> open_header(const std::string& path, uint32_t rank,
                                   std::vector<uint32_t>& dims,
                                   uint64_t& elements) {
  gz_file in{gzopen(path.c_str(), "rb")};
  if (!in)
    return bad(path, "cannot open it (missing or unreadable)");
  unsigned char magic[4];
  if (gzread(in.get(), magic, 4) != 4)
    return bad(path, "shorter than its 4-byte magic number");
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08
      || magic[3] != rank) {
    char text[16];
    std::snprintf(text, sizeof text, "%02x%02x%02x%02x", magic[0], magic[1],
                  magic[2], magic[3]);
    return bad(path, std::string{"magic number 0x"} + text
                       + ", expected 0x000008" + (rank < 16 ? "0" : "")
                       + std::to_string(rank)
                       + " (unsigned bytes, " + std::to_string(rank)
                       + " dimension(s))");
  }
  dims.resize(rank);
  elements = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    unsigned char word[4];
    if (gzread(in.get(), word, 4) != 4)
      return bad(path, "the header ends inside dimension "
                         + std::to_string(d + 1));
    dims[d] = big_endian(word);
    if (dims[d] == 0)
      return bad(path, "dimension " + std::to_string(d + 1)
                         + " is 0, expected at least 1");
    elements *= dims[d];
    if (elements > max_elements)
      return bad(path, "the header claims more than "
                         + std::to_string(max_elements) + " elements");
  }
  return in;
}

} // namespace

size_t idx_array::item_size() const noexcept {
  size_t n = 1;
  for (size_t d = 1; d < dims.size(); ++d)
    n *= dims[d];
  return n;
}

caf::expected<std::vector<uint32_t>> read_idx_dims(const std::string& path,
                                                   uint32_t rank) {
  std::vector<uint32_t> dims;
  uint64_t elements = 0;
  auto in = open_header(path, rank, dims, elements);
  if (!in)
    return std::move(in.error());
  return dims;
}

caf::expected<idx_array> read_idx(const std::string& path, uint32_t rank) {
  idx_array out;
  uint64_t elements = 0;
  auto in = open_header(path, rank, out.dims, elements);
  if (!in)
    return std::move(in.error());
  out.data.resize(elements);
  uint64_t have = 0;
  while (have < elements) {
    auto chunk = static_cast<unsigned>(
      std::min<uint64_t>(elements - have, 1u << 30));
    int got = gzread(in->get(), out.data.data() + have, chunk);
    if (got < 0) {
      int code = 0;
      return bad(path, std::string{"cannot decompress it: "}
                         + gzerror(in->get(), &code));
    }
    if (got == 0)
      return bad(path, "truncated: " + std::to_string(have)
                         + " bytes of data, expected "
                         + std::to_string(elements));
    have += static_cast<uint64_t>(got);
  }
  unsigned char extra;
  if (gzread(in->get(), &extra, 1) != 0)
    return bad(path, "more data than the header's "
                       + std::to_string(elements) + " bytes");
  return out;
}

} // namespace stoker
