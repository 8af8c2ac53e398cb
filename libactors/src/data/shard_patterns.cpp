#include "data/tar_shards.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

#include "stoker/errors.hpp"

// Which shard files pipeline.data names: a directory, one file, or a
// WebDataset brace pattern (tar_shards.cpp indexes what they hold).

namespace stoker {

namespace fs = std::filesystem;

namespace detail {

caf::error shards_error(const std::string& data, const std::string& what) {
  return make_error(errc::invalid_config,
                    "shards \"" + data + "\": " + what);
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 18
         && std::all_of(s.begin(), s.end(),
                        [](unsigned char c) { return std::isdigit(c); });
}

} // namespace detail

namespace {

constexpr size_t max_expanded = 10'000'000;

using detail::all_digits;
using detail::shards_error;

// Expands the first brace group of `pattern`, then the rest, recursively,
// as Python's braceexpand (WebDataset's) does for ranges and lists.
caf::error expand_braces(const std::string& data, const std::string& pattern,
                         std::vector<std::string>& out) {
  auto open = pattern.find('{');
  if (open == std::string::npos) {
    if (pattern.find('}') != std::string::npos)
      return shards_error(data, "a '}' without its '{'");
    if (out.size() >= max_expanded)
      return shards_error(data, "names more than " + std::to_string(max_expanded)
                         + " shards");
    out.push_back(pattern);
    return caf::none;
  }
  auto close = pattern.find('}', open);
  if (close == std::string::npos)
    return shards_error(data, "a '{' without its '}'");
  auto body = pattern.substr(open + 1, close - open - 1);
  auto head = pattern.substr(0, open);
  auto tail = pattern.substr(close + 1);
  std::vector<std::string> items;
  if (auto dots = body.find(".."); dots != std::string::npos) {
    auto a = body.substr(0, dots);
    auto b = body.substr(dots + 2);
    if (!all_digits(a) || !all_digits(b))
      return shards_error(data, "{" + body
                         + "}: expected a range of whole numbers, e.g. "
                           "{000000..000146}");
    auto lo = std::stoull(a);
    auto hi = std::stoull(b);
    if (lo > hi)
      return shards_error(data, "{" + body + "}: the range runs backwards");
    if (hi - lo >= max_expanded)
      return shards_error(data, "{" + body + "}: more than "
                         + std::to_string(max_expanded) + " shards");
    bool padded = (a.size() > 1 && a[0] == '0') || (b.size() > 1 && b[0] == '0');
    auto width = padded ? std::max(a.size(), b.size()) : size_t{0};
    for (auto i = lo; i <= hi; ++i) {
      auto text = std::to_string(i);
      if (text.size() < width)
        text.insert(0, width - text.size(), '0');
      items.push_back(std::move(text));
    }
  } else {
    size_t from = 0;
    for (;;) {
      auto comma = body.find(',', from);
      items.push_back(body.substr(from, comma - from));
      if (comma == std::string::npos)
        break;
      from = comma + 1;
    }
  }
  for (auto& item : items)
    if (auto err = expand_braces(data, head + item + tail, out))
      return err;
  return caf::none;
}

} // namespace

caf::expected<std::vector<std::string>>
expand_shards(const std::string& data) {
  std::error_code ec;
  std::vector<std::string> out;
  if (fs::is_directory(data, ec)) {
    for (auto& entry : fs::directory_iterator(data, ec))
      if (entry.is_regular_file(ec) && entry.path().extension() == ".tar")
        out.push_back(entry.path().string());
    if (ec)
      return detail::shards_error(data, "cannot list it: " + ec.message());
    std::sort(out.begin(), out.end());
    if (out.empty())
      return detail::shards_error(
        data, "a directory without .tar files; expected WebDataset shards "
              "(tools/data/make-shards writes them)");
    return out;
  }
  if (auto err = expand_braces(data, data, out))
    return err;
  for (size_t i = 0; i < out.size(); ++i)
    if (!fs::is_regular_file(out[i], ec))
      return detail::shards_error(data, "shard " + std::to_string(i + 1) + " of "
                         + std::to_string(out.size()) + ", \"" + out[i]
                         + "\", is missing (or not a file, or not shared "
                           "with this node)");
  return out;
}

} // namespace stoker
