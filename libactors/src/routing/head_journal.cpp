#include "routing/head_journal.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include <sys/stat.h>

#include "stoker/errors.hpp"
#include "core/atomic_file.hpp"

namespace stoker {

namespace {

constexpr const char* header = "stoker head journal 1";

caf::error bad(const std::string& where, const std::string& what) {
  return make_error(errc::invalid_config, where + ": " + what);
}

bool to_u64(const std::string& text, uint64_t& out) {
  if (text.empty() || text.size() > 20)
    return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    auto digit = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10)
      return false;
    v = v * 10 + digit;
  }
  out = v;
  return true;
}

// "key=value" words, by key.
std::map<std::string, std::string> words_of(const std::string& run) {
  std::map<std::string, std::string> out;
  std::istringstream in{run};
  std::string word;
  while (in >> word) {
    auto eq = word.find('=');
    out[word.substr(0, eq)] = eq == std::string::npos ? "" : word.substr(eq + 1);
  }
  return out;
}

} // namespace

std::string encode_head_journal(const head_journal& j) {
  std::ostringstream out;
  out << header << '\n'
      << "run = " << j.run << '\n'
      << "finished = " << (j.finished ? 1 : 0) << '\n'
      << "heads = " << j.heads << '\n'
      << "acked_batches = " << j.acked_batches << '\n'
      << "acked_samples = " << j.acked_samples << '\n'
      << "checkpoints = " << j.checkpoints << '\n'
      << "run_ns = " << j.run_ns << '\n'
      << "acked_below = " << j.acked_below << '\n'
      << "acked_ids =";
  for (auto id : j.acked_ids)
    out << ' ' << id;
  out << '\n';
  return out.str();
}

caf::expected<head_journal> decode_head_journal(const std::string& text,
                                                const std::string& where) {
  std::istringstream in{text};
  std::string line;
  if (!std::getline(in, line) || line != header)
    return bad(where, "the first line is not \"" + std::string{header}
                        + "\"; expected a journal a Stoker head wrote");
  head_journal j;
  std::map<std::string, bool> seen;
  int number = 1;
  while (std::getline(in, line)) {
    ++number;
    auto at = "line " + std::to_string(number);
    auto eq = line.find(" =");
    if (eq == std::string::npos)
      return bad(where, at + " (\"" + line.substr(0, 60)
                          + "\"): expected KEY = VALUE");
    auto key = line.substr(0, eq);
    auto value = line.size() > eq + 3 ? line.substr(eq + 3) : std::string{};
    if (seen[key])
      return bad(where, at + ": " + key + " a second time");
    seen[key] = true;
    uint64_t n = 0;
    auto number_of = [&](uint64_t& field) -> caf::error {
      if (!to_u64(value, n))
        return bad(where, at + ": " + key + " = \"" + value
                            + "\"; expected a whole number");
      field = n;
      return caf::none;
    };
    caf::error err;
    if (key == "run") {
      j.run = value;
    } else if (key == "finished") {
      uint64_t f = 0;
      err = number_of(f);
      if (!err && f > 1)
        err = bad(where, at + ": finished = " + value + "; expected 0 or 1");
      j.finished = f == 1;
    } else if (key == "heads") {
      uint64_t h = 0;
      err = number_of(h);
      if (!err && (h == 0 || h > UINT32_MAX))
        err = bad(where, at + ": heads = " + value + "; expected 1 or more");
      j.heads = static_cast<uint32_t>(h);
    } else if (key == "acked_batches") {
      err = number_of(j.acked_batches);
    } else if (key == "acked_samples") {
      err = number_of(j.acked_samples);
    } else if (key == "checkpoints") {
      err = number_of(j.checkpoints);
    } else if (key == "run_ns") {
      err = number_of(j.run_ns);
    } else if (key == "acked_below") {
      err = number_of(j.acked_below);
    } else if (key == "acked_ids") {
      std::istringstream ids{value};
      std::string word;
      while (ids >> word) {
        uint64_t id = 0;
        if (!to_u64(word, id) || id < j.acked_below
            || (!j.acked_ids.empty() && id <= j.acked_ids.back()))
          return bad(where, at + ": acked_ids has \"" + word
                              + "\"; expected ascending ids above "
                                "acked_below");
        j.acked_ids.push_back(id);
      }
    } else {
      return bad(where, at + ": unknown key \"" + key + "\"");
    }
    if (err)
      return err;
  }
  for (auto key : {"run", "finished", "heads", "acked_batches",
                   "acked_samples", "checkpoints", "run_ns", "acked_below",
                   "acked_ids"})
    if (!seen[key])
      return bad(where, std::string{"no "} + key
                          + " line; expected every key a head writes (a "
                            "file cut short?)");
  return j;
}

std::string head_journal_path(const std::string& dir) {
  return dir + "/" + head_journal::file_name;
}

caf::error write_head_journal(const std::string& dir, const head_journal& j) {
  ::mkdir(dir.c_str(), 0755); // EEXIST is fine; the write reports others
  if (auto err = write_file_atomically(head_journal_path(dir),
                                       encode_head_journal(j)))
    return make_error(errc::io_failure,
                      "cluster.state-dir: " + describe(err));
  return caf::none;
}

caf::expected<head_journal> read_head_journal(const std::string& dir) {
  auto path = head_journal_path(dir);
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return make_error(errc::io_failure,
                      "cluster.state-dir = \"" + dir + "\": cannot read "
                        + path + " (" + std::strerror(errno)
                        + "); expected the journal of a head that ran with "
                          "this state dir");
  std::string text{std::istreambuf_iterator<char>{in},
                   std::istreambuf_iterator<char>{}};
  return decode_head_journal(text, path);
}

caf::error check_same_run(const std::string& journaled, const std::string& now,
                          const std::string& where) {
  auto was = words_of(journaled);
  auto is = words_of(now);
  for (auto& [key, value] : is) {
    auto old = was.find(key);
    auto before = old == was.end() ? std::string{"(none)"} : old->second;
    if (before != value)
      return make_error(errc::invalid_config,
                        "--resume: " + where + " journals a run with " + key
                          + " = " + before + ", this head has " + value
                          + "; expected the same run (or another "
                            "cluster.state-dir for a new one)");
  }
  return caf::none;
}

} // namespace stoker
