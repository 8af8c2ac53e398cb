#include "my_entries.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "stoker/errors.hpp"

namespace {

caf::error bad(const std::string& what) {
  return stoker::make_error(stoker::errc::invalid_config, what);
}

// A whole CSV file in memory: labels and 8-bit pixels, row by row.
struct csv_table {
  std::vector<int64_t> labels;
  std::vector<uint8_t> pixels;
  std::string fingerprint; ///< size and FNV-1a hash of the file's bytes
};

// Reads `path`; errors name the file, the line and what was expected.
caf::expected<csv_table> read_csv(const std::string& key,
                                  const std::string& path, size_t per_image) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return bad(key + " = \"" + path + "\": cannot open the file");
  std::string bytes{std::istreambuf_iterator<char>{in},
                    std::istreambuf_iterator<char>{}};
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : bytes)
    hash = (hash ^ c) * 1099511628211ull;
  csv_table t;
  t.fingerprint = std::to_string(bytes.size()) + "-" + std::to_string(hash);
  std::istringstream lines{bytes};
  std::string line;
  for (size_t number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty())
      continue;
    if (number == 1 && (line[0] < '0' || line[0] > '9'))
      continue; // a header such as "label,pixel1,..."
    auto where = key + " = \"" + path + "\", line " + std::to_string(number);
    std::vector<long> fields;
    const char* p = line.c_str();
    for (;;) {
      char* end = nullptr;
      long v = std::strtol(p, &end, 10);
      if (end == p || v < 0 || v > 255)
        return bad(where + ": field " + std::to_string(fields.size() + 1)
                   + " is not a whole number from 0 to 255");
      fields.push_back(v);
      if (*end == '\0')
        break;
      if (*end != ',')
        return bad(where + ": expected comma-separated numbers");
      p = end + 1;
    }
    if (fields.size() != per_image + 1)
      return bad(where + ": " + std::to_string(fields.size())
                 + " fields, expected a label and "
                 + std::to_string(per_image) + " pixels");
    t.labels.push_back(fields[0]);
    for (size_t i = 1; i < fields.size(); ++i)
      t.pixels.push_back(static_cast<uint8_t>(fields[i]));
  }
  if (t.labels.empty())
    return bad(key + " = \"" + path + "\": no images; expected one per line");
  return t;
}

// One split, read from several worker threads at once: immutable.
class csv_dataset final : public stoker::dataset {
public:
  csv_dataset(csv_table table, int height, int width,
              stoker::sample_subset pick)
    : table_(std::move(table)), height_(height), width_(width), pick_(pick) {
    // nop
  }

  uint64_t size() const override { return pick_.size(); }

  int64_t label(uint64_t index) const override {
    return table_.labels[pick_(index)];
  }

  caf::expected<stoker::sample_input> read(uint64_t,
                                           uint64_t index) const override {
    auto at = table_.pixels.data() + pick_(index) * height_ * width_;
    stoker::sample_input in;
    // A view of the table: transforms write new images, never into this.
    in.pixels = cv::Mat(height_, width_, CV_8UC1, const_cast<uint8_t*>(at));
    return in;
  }

  std::string name(uint64_t index) const override {
    return "csv line " + std::to_string(pick_(index) + 1);
  }

private:
  csv_table table_;
  int height_;
  int width_;
  stoker::sample_subset pick_;
};

struct split_file {
  std::string key;
  std::string path;
  uint64_t limit;
};

split_file file_of(const stoker::data_spec& data, stoker::split which) {
  if (which == stoker::split::train)
    return {"pipeline.data", data.data, data.train_limit};
  return {"pipeline.eval-data", data.eval_data, data.eval_limit};
}

} // namespace

stoker::source_def csv_images_source() {
  stoker::source_def def;
  def.name = "csv-images";
  def.min_args = def.max_args = 2;
  def.usage = "csv-images(HEIGHT, WIDTH)";
  def.version = "1"; // bump when the images it makes change
  // On the head: read both files, say what they hold.
  def.resolve = [](const stoker::data_spec& data, const stoker::synthetic_spec&)
    -> caf::expected<stoker::source_view> {
    auto& a = data.source.args;
    if (!(a[0] >= 1 && a[1] >= 1 && a[0] <= 4096 && a[1] <= 4096))
      return bad("pipeline.source = \"" + data.source.text
                 + "\": HEIGHT and WIDTH from 1 to 4096 expected");
    if (data.data.empty() || (data.eval && data.eval_data.empty()))
      return bad("pipeline.source = \"csv-images\" needs pipeline.data (and "
                 "pipeline.eval-data with trainer.eval): CSV files");
    auto per_image = static_cast<size_t>(a[0] * a[1]);
    auto train = read_csv("pipeline.data", data.data, per_image);
    if (!train)
      return std::move(train.error());
    stoker::source_view v;
    v.input = {static_cast<uint32_t>(a[0]), static_cast<uint32_t>(a[1]), 1};
    v.train_size = stoker::sample_subset{train->labels.size(),
                                         data.train_limit, data.seed}
                     .size();
    v.num_classes = static_cast<uint32_t>(
      1 + *std::max_element(train->labels.begin(), train->labels.end()));
    v.fingerprint = train->fingerprint;
    if (data.eval) {
      auto test = read_csv("pipeline.eval-data", data.eval_data, per_image);
      if (!test)
        return std::move(test.error());
      v.eval_size = stoker::sample_subset{test->labels.size(),
                                          data.eval_limit, data.seed}
                      .size();
      v.fingerprint += ":" + test->fingerprint;
    }
    return v;
  };
  // On each worker node: read the split and refuse other bytes than the
  // head's (the nodes share storage; a different file means other images).
  def.open = [](const stoker::data_spec& data, stoker::split which,
                const stoker::synthetic_spec&)
    -> caf::expected<std::shared_ptr<const stoker::dataset>> {
    auto& a = data.source.args;
    auto file = file_of(data, which);
    auto table = read_csv(file.key, file.path,
                          static_cast<size_t>(a[0] * a[1]));
    if (!table)
      return std::move(table.error());
    auto colon = data.fingerprint.find(':');
    auto theirs = which == stoker::split::train
                    ? data.fingerprint.substr(0, colon)
                  : colon == std::string::npos
                    ? std::string{}
                    : data.fingerprint.substr(colon + 1);
    if (table->fingerprint != theirs)
      return bad(file.key + " = \"" + file.path + "\" differs on this node ("
                 + table->fingerprint + ", the head's " + theirs
                 + "); expected the same file on every node");
    stoker::sample_subset pick{table->labels.size(), file.limit, data.seed};
    return std::shared_ptr<const stoker::dataset>{std::make_shared<csv_dataset>(
      std::move(*table), static_cast<int>(a[0]), static_cast<int>(a[1]),
      pick)};
  };
  return def;
}
