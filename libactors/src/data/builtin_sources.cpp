// The built-in sources as registry entries: the article's synthetic
// images, IDX files (Fashion-MNIST) and a folder of image files per class.

#include <algorithm>
#include <filesystem>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "data/idx_file.hpp"
#include "data/image_folder.hpp"
#include "data/synthetic_mapper.hpp"
#include "data/tar_shards.hpp"
#include "registry/builtins.hpp"

namespace stoker::detail {

namespace {

caf::error bad(const std::string& what) {
  return make_error(errc::invalid_config, what);
}

// The IDX files of one split, plain or gzip.
std::string idx_path(const std::string& dir, split which, bool images) {
  std::string name = std::string{which == split::train ? "train" : "t10k"}
                     + (images ? "-images-idx3-ubyte" : "-labels-idx1-ubyte");
  auto plain = (std::filesystem::path{dir} / name).string();
  std::error_code ec;
  return std::filesystem::exists(plain, ec) ? plain : plain + ".gz";
}

class idx_dataset final : public dataset {
public:
  idx_dataset(idx_array images, idx_array labels, sample_subset pick)
    : images_(std::move(images)), labels_(std::move(labels)), pick_(pick) {
    // nop
  }

  uint64_t size() const override { return pick_.size(); }

  int64_t label(uint64_t index) const override {
    return labels_.data[pick_(index)];
  }

  caf::expected<sample_input> read(uint64_t, uint64_t index) const override {
    sample_input in;
    auto* at = images_.data.data() + pick_(index) * images_.item_size();
    // A view of the shared array: transforms never write to their input.
    in.pixels = cv::Mat(static_cast<int>(images_.dims[1]),
                        static_cast<int>(images_.dims[2]), CV_8UC1,
                        const_cast<uint8_t*>(at));
    return in;
  }

  std::string name(uint64_t index) const override {
    return "image " + std::to_string(pick_(index));
  }

private:
  idx_array images_;
  idx_array labels_;
  sample_subset pick_;
};

class folder_dataset final : public dataset {
public:
  folder_dataset(std::string root, folder_listing listing, sample_subset pick)
    : root_(std::move(root)), listing_(std::move(listing)), pick_(pick) {
    // nop
  }

  uint64_t size() const override { return pick_.size(); }

  int64_t label(uint64_t index) const override {
    return listing_.labels[pick_(index)];
  }

  caf::expected<sample_input> read(uint64_t, uint64_t index) const override {
    auto bytes = read_whole_file(name(index));
    if (!bytes)
      return std::move(bytes.error());
    sample_input in;
    in.encoded = std::move(*bytes);
    return in;
  }

  std::string name(uint64_t index) const override {
    return (std::filesystem::path{root_} / listing_.files[pick_(index)])
      .string();
  }

private:
  std::string root_;
  folder_listing listing_;
  sample_subset pick_;
};

class shard_dataset final : public dataset {
public:
  explicit shard_dataset(shard_listing listing)
    : listing_(std::move(listing)) {
    // nop
  }

  uint64_t size() const override { return listing_.samples.size(); }

  int64_t label(uint64_t index) const override {
    return std::max<int64_t>(0, listing_.samples[index].label);
  }

  caf::expected<sample_input> read(uint64_t, uint64_t index) const override {
    auto bytes = read_tar_sample(listing_, index);
    if (!bytes)
      return std::move(bytes.error());
    sample_input in;
    in.encoded = std::move(*bytes);
    return in;
  }

  std::string name(uint64_t index) const override {
    return tar_sample_name(listing_, index);
  }

  std::string source_of(uint64_t index) const override {
    return listing_.shards[listing_.samples[index].shard];
  }

private:
  shard_listing listing_;
};

class synthetic_dataset final : public dataset {
public:
  synthetic_dataset(synthetic_spec spec, uint64_t size)
    : spec_(spec), size_(size) {
    // nop
  }

  uint64_t size() const override { return size_; }

  int64_t label(uint64_t index) const override {
    return synthetic_label(index, spec_.num_classes);
  }

  caf::expected<sample_input> read(uint64_t epoch,
                                   uint64_t index) const override {
    sample_input in;
    in.pixels = cv::Mat(static_cast<int>(spec_.height),
                        static_cast<int>(spec_.width),
                        CV_32FC(static_cast<int>(spec_.channels)));
    make_synthetic_image(spec_, epoch, index, in.pixels.ptr<float>());
    return in;
  }

  std::string name(uint64_t index) const override {
    return "sample " + std::to_string(index);
  }

private:
  synthetic_spec spec_;
  uint64_t size_;
};

// What split `which` reads of the data spec: its files' key and path,
// its sample limit and the size the head planned for it. The one place
// that chooses between the training and the test split's settings.
struct split_settings {
  const char* key;
  const std::string& root;
  uint64_t limit;
  uint64_t planned;
};

split_settings settings_of(const data_spec& data, split which) {
  if (which == split::train)
    return {"pipeline.data", data.data, data.train_limit, data.train_size};
  return {"pipeline.eval-data", data.eval_data, data.eval_limit,
          data.eval_size};
}

caf::expected<std::shared_ptr<const dataset>>
open_idx(const data_spec& data, split which) {
  auto images = read_idx(idx_path(data.data, which, true), 3);
  if (!images)
    return bad("pipeline.data = \"" + data.data + "\": "
               + describe(images.error()));
  auto labels = read_idx(idx_path(data.data, which, false), 1);
  if (!labels)
    return bad("pipeline.data = \"" + data.data + "\": "
               + describe(labels.error()));
  if (labels->dims[0] != images->dims[0])
    return bad("pipeline.data = \"" + data.data + "\": "
               + std::to_string(images->dims[0]) + " images but "
               + std::to_string(labels->dims[0])
               + " labels; expected one label per image");
  sample_subset pick{images->dims[0], settings_of(data, which).limit,
                     data.seed};
  return std::shared_ptr<const dataset>{std::make_shared<idx_dataset>(
    std::move(*images), std::move(*labels), pick)};
}

// The head's fingerprint of split `which`: "TRAIN" or "TRAIN:TEST".
std::string head_fingerprint(const data_spec& data, split which) {
  auto at = data.fingerprint.find(':');
  if (which == split::train)
    return data.fingerprint.substr(0, at);
  return at == std::string::npos ? std::string{}
                                 : data.fingerprint.substr(at + 1);
}

// A worker's view of split `which` must be the head's: otherwise an error
// naming the path, what it sees here (`sees`: "lists other files"; `here`:
// its counts) and both fingerprints.
caf::error same_as_heads(const data_spec& data, split which,
                         const std::string& mine, const std::string& sees,
                         const std::string& here, const std::string& things) {
  auto theirs = head_fingerprint(data, which);
  if (mine == theirs)
    return caf::none;
  return bad("\"" + settings_of(data, which).root + "\" " + sees + " here than on the head (" + here
             + ", fingerprint " + mine + ", the head's " + theirs
             + "); expected the same " + things
             + " on every node (shared storage)");
}

// The folder of one split, listed, or the error naming its key.
caf::expected<folder_listing> listing_of(const data_spec& data, split which) {
  auto settings = settings_of(data, which);
  auto listing = list_image_folder(settings.root);
  if (!listing)
    return bad(std::string{settings.key} + ": "
               + describe(listing.error()));
  return listing;
}


caf::expected<source_view> resolve_synthetic(const data_spec& data,
                                             const synthetic_spec& image) {
  if (data.eval)
    return bad("trainer.eval = true: a synthetic source has no test "
               "split; expected pipeline.source = \"idx\" or "
               "\"image-folder\"");
  source_view v;
  v.input = {image.height, image.width, image.channels};
  v.train_size = data.train_limit; // pipeline.dataset-size
  v.num_classes = image.num_classes;
  return v;
}

caf::expected<std::shared_ptr<const dataset>>
open_synthetic(const data_spec& data, split, const synthetic_spec& image) {
  return std::shared_ptr<const dataset>{
    std::make_shared<synthetic_dataset>(image, data.train_size)};
}

caf::expected<source_view> resolve_idx(const data_spec& data,
                                       const synthetic_spec&) {
  if (data.data.empty())
    return bad("pipeline.source = \"idx\" needs pipeline.data (a "
               "directory with train-images-idx3-ubyte[.gz] and the "
               "other three files)");
  auto fail = [&](const caf::error& err) {
    return bad("pipeline.data = \"" + data.data + "\": " + describe(err));
  };
  // Labels are small (60 KB for Fashion-MNIST); images stay unread.
  auto dims = read_idx_dims(idx_path(data.data, split::train, true), 3);
  if (!dims)
    return fail(dims.error());
  auto labels = read_idx(idx_path(data.data, split::train, false), 1);
  if (!labels)
    return fail(labels.error());
  if (labels->dims[0] != (*dims)[0])
    return bad("pipeline.data = \"" + data.data + "\": "
               + std::to_string((*dims)[0]) + " images but "
               + std::to_string(labels->dims[0]) + " labels");
  source_view v;
  v.input = {(*dims)[1], (*dims)[2], 1};
  v.train_size = sample_subset{(*dims)[0], data.train_limit, data.seed}.size();
  v.num_classes = 1 + *std::max_element(labels->data.begin(),
                                        labels->data.end());
  if (data.eval) {
    auto test = read_idx_dims(idx_path(data.data, split::test, true), 3);
    if (!test)
      return fail(test.error());
    v.eval_size = sample_subset{(*test)[0], data.eval_limit, data.seed}.size();
  }
  return v;
}

caf::expected<std::shared_ptr<const dataset>>
open_idx_checked(const data_spec& data, split which, const synthetic_spec&) {
  auto opened = open_idx(data, which);
  auto want = settings_of(data, which).planned;
  if (opened && (*opened)->size() != want)
    return bad("pipeline.data = \"" + data.data + "\" holds "
               + std::to_string((*opened)->size())
               + " samples here, but the head planned " + std::to_string(want)
               + "; expected the same files on every node (shared storage)");
  return opened;
}

caf::expected<source_view> resolve_folder(const data_spec& data,
                                          const synthetic_spec&) {
  auto train = listing_of(data, split::train);
  if (!train)
    return std::move(train.error());
  source_view v;
  v.files = true;
  v.train_size = sample_subset{train->files.size(), data.train_limit,
                               data.seed}.size();
  v.num_classes = static_cast<uint32_t>(train->classes.size());
  v.fingerprint = train->fingerprint;
  if (data.eval) {
    if (data.eval_data.empty())
      return bad("trainer.eval = true with an image-folder source needs "
                 "pipeline.eval-data (the test folder)");
    auto test = listing_of(data, split::test);
    if (!test)
      return std::move(test.error());
    if (test->classes != train->classes)
      return bad("pipeline.eval-data = \"" + data.eval_data + "\": "
                 + std::to_string(test->classes.size())
                 + " classes, expected the training folder's "
                 + std::to_string(train->classes.size()) + " (same names)");
    v.eval_size = sample_subset{test->files.size(), data.eval_limit,
                                data.seed}.size();
    v.fingerprint += ":" + test->fingerprint;
  }
  return v;
}

caf::expected<std::shared_ptr<const dataset>>
open_folder(const data_spec& data, split which, const synthetic_spec&) {
  auto listing = listing_of(data, which);
  if (!listing)
    return std::move(listing.error());
  if (auto err = same_as_heads(data, which, listing->fingerprint,
                               "lists other files",
                               std::to_string(listing->files.size())
                                 + " files",
                               "files"))
    return err;
  auto settings = settings_of(data, which);
  sample_subset pick{listing->files.size(), settings.limit, data.seed};
  return std::shared_ptr<const dataset>{std::make_shared<folder_dataset>(
    settings.root, std::move(*listing), pick)};
}

// The shards of one split, indexed, or the error naming its key.
caf::expected<shard_listing> shards_of(const data_spec& data, split which) {
  auto settings = settings_of(data, which);
  auto listing = list_tar_shards(settings.root, settings.limit);
  if (!listing)
    return bad(std::string{settings.key} + ": "
               + describe(listing.error()));
  return listing;
}

caf::expected<source_view> resolve_shards(const data_spec& data,
                                          const synthetic_spec&) {
  if (data.data.empty())
    return bad("pipeline.source = \"tar-shards\" needs pipeline.data (a "
               "directory of .tar shards, one shard, or a pattern such as "
               "train-{000000..000146}.tar)");
  auto train = shards_of(data, split::train);
  if (!train)
    return std::move(train.error());
  source_view v;
  v.files = true;
  v.train_size = train->samples.size();
  v.num_classes = train->num_classes;
  v.fingerprint = train->fingerprint;
  v.shards = train->counts;
  v.damage = train->damage;
  if (data.eval) {
    if (data.eval_data.empty())
      return bad("trainer.eval = true with a tar-shards source needs "
                 "pipeline.eval-data (the test shards)");
    auto test = shards_of(data, split::test);
    if (!test)
      return std::move(test.error());
    if (test->num_classes > v.num_classes)
      return bad("pipeline.eval-data = \"" + data.eval_data
                 + "\": labels up to " + std::to_string(test->num_classes - 1)
                 + ", expected below the training shards' "
                 + std::to_string(v.num_classes));
    v.eval_size = test->samples.size();
    v.fingerprint += ":" + test->fingerprint;
    v.damage.insert(v.damage.end(), test->damage.begin(), test->damage.end());
  }
  return v;
}

caf::expected<std::shared_ptr<const dataset>>
open_shards(const data_spec& data, split which, const synthetic_spec&) {
  auto listing = shards_of(data, which);
  if (!listing)
    return std::move(listing.error());
  if (auto err = same_as_heads(data, which, listing->fingerprint,
                               "holds other shards",
                               std::to_string(listing->shards.size())
                                 + " shards, "
                                 + std::to_string(listing->samples.size())
                                 + " samples",
                               "shards"))
    return err;
  return std::shared_ptr<const dataset>{
    std::make_shared<shard_dataset>(std::move(*listing))};
}

} // namespace

void add_builtin_sources(registry& reg) {
  // None takes arguments: their files come from pipeline.data.
  auto define = [](const char* name, auto resolve, auto open) {
    source_def def;
    def.name = def.usage = name;
    def.resolve = resolve;
    def.open = open;
    return def;
  };
  must_add(reg.add(define("synthetic", resolve_synthetic, open_synthetic)));
  must_add(reg.add(define("idx", resolve_idx, open_idx_checked)));
  must_add(reg.add(define("image-folder", resolve_folder, open_folder)));
  must_add(reg.add(define("tar-shards", resolve_shards, open_shards)));
}

} // namespace stoker::detail
