#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <cstdlib>
#include <fstream>

#include <sys/wait.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <caf/actor_system.hpp>

#include "stoker/dataset.hpp"
#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "data/idx_file.hpp"
#include "data/image_folder.hpp"
#include "data/resolve.hpp"
#include "data/sample_mapper.hpp"
#include "core/checksum.hpp"
#include "data/tar_shards.hpp"
#include "kernels/blur.hpp"
#include "node/local_role.hpp"
#include "node/node_config.hpp"

#include "support/real_data.hpp"
#include "support/tar_writer.hpp"

using namespace stoker;
using namespace stoker_test;

namespace {

// The first `n` Fashion-MNIST training images as PNG class folders, and a
// corrupt "PNG" among them.
void export_small_set(const std::string& root, uint64_t n) {
  require_fashion_mnist();
  auto images = read_idx(fashion_mnist_dir + "/train-images-idx3-ubyte.gz", 3);
  auto labels = read_idx(fashion_mnist_dir + "/train-labels-idx1-ubyte.gz", 1);
  BOOST_REQUIRE(images);
  BOOST_REQUIRE(labels);
  auto written = export_image_folder(*images, *labels, root,
                                     fashion_mnist_classes(), n);
  BOOST_REQUIRE(written);
  BOOST_TEST(*written == n);
  std::ofstream{root + "/3-dress/zz-corrupt.png"} << "not a PNG at all";
}

data_spec folder_spec(const std::string& root) {
  data_spec d;
  d.source = *parse_entry("image-folder");
  d.data = root;
  for (auto text : {"decode(1)", "resize(16, 16)", "to-tensor"})
    d.transforms.push_back(*parse_entry(text));
  return d;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A local run of the small CNN, 2 epochs of batches of 32 over 28x28
// crops, 2 workers, from the source `source` names.
caf::expected<run_report> train_small_cnn(std::vector<std::string> source) {
  std::vector<std::string> args = {
    "--pipeline.transforms=[\"decode(1)\", \"random-crop(28, 2)\", "
    "\"horizontal-flip\", \"to-tensor\"]",
    "--pipeline.batch-size=32", "--pipeline.epochs=2", "--trainer.model=cnn",
    "--trainer.device=cpu", "--trainer.lr=0.01", "--trainer.threads=1",
    "--worker.count=2", "--trainer.log-every=1000"};
  source.insert(source.end(), args.begin(), args.end());
  node_config cfg;
  auto loaded = cfg.load(source, builtin_registry());
  if (!loaded)
    return std::move(loaded.error());
  caf::actor_system sys{cfg};
  return run_local(sys, **loaded, builtin_registry());
}

} // namespace

BOOST_AUTO_TEST_SUITE(dataset)

BOOST_AUTO_TEST_CASE(an_image_folder_lists_classes_in_name_order) {
  scratch_dir dir{"folder-list"};
  export_small_set(dir.path, 60);
  auto listing = list_image_folder(dir.path);
  BOOST_REQUIRE(listing);
  BOOST_TEST(listing->classes == fashion_mnist_classes());
  BOOST_TEST(listing->files.size() == 61u);
  BOOST_TEST(std::is_sorted(listing->labels.begin(), listing->labels.end()));
  auto again = list_image_folder(dir.path);
  BOOST_TEST(again->fingerprint == listing->fingerprint);
  std::ofstream{dir.path + "/0-tshirt-top/new.png"} << "x";
  BOOST_TEST(list_image_folder(dir.path)->fingerprint != listing->fingerprint);
  auto missing = list_image_folder(dir.path + "/nope");
  BOOST_REQUIRE(!missing);
  BOOST_TEST(has(describe(missing.error()), "not a directory"));
}

BOOST_AUTO_TEST_CASE(a_corrupt_file_is_skipped_and_named_not_fatal) {
  scratch_dir dir{"folder-skip"};
  export_small_set(dir.path, 40);
  auto data = folder_spec(dir.path);
  source_spec source;
  BOOST_REQUIRE(!resolve_data(data, source, synthetic_spec{},
                              builtin_registry()));
  BOOST_TEST(source.dataset_size == 41u);
  BOOST_TEST(data.num_classes == 10u);
  BOOST_TEST(data.output.height == 16u);
  BOOST_TEST(data.output.channels == 1u);
  auto opened = open_dataset(data, split::train, synthetic_spec{},
                              builtin_registry());
  BOOST_REQUIRE(opened);
  work_item item;
  for (uint64_t i = 0; i < 41; ++i)
    item.sample_ids.push_back(i);
  auto chain = transform_chain::bind(data.transforms, builtin_registry());
  BOOST_REQUIRE(chain);
  auto batch = map_samples(**opened, *chain, data.output, 0, item);
  BOOST_TEST(batch.size() == 40u);
  BOOST_REQUIRE(batch.skipped_ids.size() == 1u);
  BOOST_TEST(has(batch.skipped_names[0], "zz-corrupt.png"));
  BOOST_TEST(batch.data.size() == 40u * 16 * 16 * 4);
  BOOST_TEST((batch.order == layout::chw));
  for (size_t i = 0; i < batch.size(); ++i)
    BOOST_TEST(batch.labels[i] == (*opened)->label(batch.sample_ids[i]));
}

BOOST_AUTO_TEST_CASE(a_worker_whose_files_differ_from_the_heads_is_refused) {
  scratch_dir dir{"folder-differ"};
  export_small_set(dir.path, 20);
  auto data = folder_spec(dir.path);
  source_spec source;
  BOOST_REQUIRE(!resolve_data(data, source, synthetic_spec{},
                              builtin_registry()));
  std::filesystem::rename(dir.path + "/3-dress/zz-corrupt.png",
                          dir.path + "/3-dress/renamed.png");
  auto opened = open_dataset(data, split::train, synthetic_spec{},
                              builtin_registry());
  BOOST_REQUIRE(!opened);
  BOOST_TEST(has(describe(opened.error()), "other files here than on the head"));
  std::filesystem::remove(dir.path + "/3-dress/renamed.png");
  opened = open_dataset(data, split::train, synthetic_spec{},
                              builtin_registry());
  BOOST_REQUIRE(!opened);
  BOOST_TEST(has(describe(opened.error()), "20 files"));
}

BOOST_AUTO_TEST_CASE(a_limit_takes_a_fixed_subset_of_every_class) {
  require_fashion_mnist();
  data_spec data;
  data.source = *parse_entry("idx");
  data.data = fashion_mnist_dir;
  data.train_limit = 1000;
  data.eval = true;
  data.eval_limit = 500;
  source_spec source;
  source.seed = 3;
  BOOST_REQUIRE(!resolve_data(data, source, synthetic_spec{},
                              builtin_registry()));
  BOOST_TEST(source.dataset_size == 1000u);
  BOOST_TEST(source.eval_size == 500u);
  BOOST_TEST(data.output.height == 28u);
  BOOST_TEST(data.transforms.size() == 1u); // to-tensor by default
  auto train = open_dataset(data, split::train, synthetic_spec{},
                              builtin_registry());
  BOOST_REQUIRE(train);
  std::vector<int> per_class(10);
  for (uint64_t i = 0; i < 1000; ++i)
    ++per_class[(*train)->label(i)];
  for (auto n : per_class)
    BOOST_TEST(n > 50); // ~100 each, not the first classes only
}

BOOST_AUTO_TEST_CASE(bad_data_settings_name_the_key_and_the_path) {
  auto refuse = [](std::vector<std::string> args) {
    node_config cfg;
    auto r = cfg.load(args, builtin_registry());
    BOOST_REQUIRE(!r);
    return describe(r.error());
  };
  BOOST_TEST(has(refuse({"--pipeline.source=idx"}), "needs pipeline.data"));
  BOOST_TEST(has(refuse({"--pipeline.source=idx", "--pipeline.data=/nope"}),
                 "pipeline.data = \"/nope\""));
  BOOST_TEST(has(refuse({"--pipeline.source=images"}),
                 "pipeline.source = \"images\": unknown source 'images'; "
                 "expected synthetic, idx, image-folder or tar-shards"));
  BOOST_TEST(has(refuse({"--trainer.eval"}), "has no test split"));
  scratch_dir empty{"folder-empty"};
  BOOST_TEST(has(refuse({"--pipeline.source=image-folder",
                         "--pipeline.data=" + empty.path}),
                 "no class sub-directories"));
  BOOST_TEST(has(refuse({"--pipeline.transforms=[\"blur\"]"}),
                 "unknown transform 'blur'"));
  BOOST_TEST(has(refuse({"--trainer.model=resnet"}),
                 "unknown model 'resnet'; expected vit or cnn"));
  BOOST_TEST(has(refuse({"--trainer.model=cnn(3)"}),
                 "trainer.model = \"cnn(3)\": 1 argument(s); usage: cnn"));
  BOOST_TEST(has(refuse({"--pipeline.source=idx(", "--pipeline.data=/x"}),
                 "closing parenthesis"));
}

BOOST_AUTO_TEST_CASE(the_export_tool_writes_class_folders_and_checks_its_arguments) {
  require_fashion_mnist();
  scratch_dir dir{"export-tool"};
  auto run = [](const std::string& args) {
    auto status = std::system((std::string{STOKER_EXPORT_BINARY} + " " + args
                               + " > /dev/null 2>&1")
                                .c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  BOOST_TEST(run(fashion_mnist_dir + " " + dir.path
                 + " --limit=25 --split=test")
             == 0);
  auto listing = list_image_folder(dir.path);
  BOOST_REQUIRE(listing);
  BOOST_TEST(listing->files.size() == 25u);
  BOOST_TEST(listing->classes.front() == "0-tshirt-top");
  BOOST_TEST(run(dir.path) == 2);                      // no OUT_DIR
  BOOST_TEST(run("a b --limit=many") == 2);            // not a number
  BOOST_TEST(run("/nope " + dir.path + "/x") == 1);    // no IDX files there
}

BOOST_AUTO_TEST_CASE(a_run_over_a_folder_with_a_corrupt_file_completes) {
  scratch_dir dir{"folder-run"};
  export_small_set(dir.path, 200);
  auto r = train_small_cnn(
    {"--pipeline.source=image-folder", "--pipeline.data=" + dir.path});
  BOOST_REQUIRE_MESSAGE(r, why(r));
  BOOST_TEST(r->missing == 0u);
  BOOST_TEST(r->duplicates == 0u);
  BOOST_TEST(r->skipped_files == 2u); // once per epoch
  BOOST_TEST(r->samples_delivered == 2u * 200); // the skipped are not
  BOOST_REQUIRE(!r->skipped_file_examples.empty());
  BOOST_TEST(has(r->skipped_file_examples[0], "zz-corrupt.png"));
  BOOST_TEST(has(r->skipped_file_examples[0], "not a decodable image"));
  BOOST_REQUIRE(r->skipped_sources.size() == 1u);
  BOOST_TEST(has(r->skipped_sources[0].source, "zz-corrupt.png"));
  BOOST_TEST(r->skipped_sources[0].samples == 2u);
  BOOST_TEST(r->epoch_train_loss.size() == 2u);
  BOOST_TEST(r->steps == 2u * 7); // ceil(201 / 32) per epoch
}

BOOST_AUTO_TEST_CASE(damaged_shards_lose_only_the_damage_and_the_report_says_where) {
  scratch_dir dir{"shards-damaged"};
  auto pattern = write_shards(dir.path, 6, 50, 5, 28);
  auto shard = [&](int i) {
    return dir.path + "/train-00000" + std::to_string(i) + ".tar";
  };
  // Member starts: each sample is KEY.png then KEY.cls, the same sizes
  // within a label; find sample 25's header by walking shard 3's members.
  auto read_all = [](const std::string& path) {
    std::ifstream in{path, std::ios::binary};
    return std::string{std::istreambuf_iterator<char>{in}, {}};
  };
  auto members_at = [](const std::string& bytes) {
    std::vector<size_t> at;
    size_t pos = 0;
    while (pos + 512 <= bytes.size() && bytes[pos] != '\0') {
      at.push_back(pos);
      auto size = std::stoull(bytes.substr(pos + 124, 11), nullptr, 8);
      pos += 512 + (size + 511) / 512 * 512;
    }
    return at;
  };
  auto third = read_all(shard(3));
  auto at = members_at(third)[2 * 25]; // sample 25's image member
  for (size_t i = 0; i < 512; ++i)
    third[at + i] = static_cast<char>(0x5a ^ i);
  write_bytes(shard(3), third);
  // Shard 5 cut inside sample 20's image.
  auto fifth = read_all(shard(5));
  write_bytes(shard(5), fifth.substr(0, members_at(fifth)[2 * 20] + 600));
  auto r = train_small_cnn(
    {"--pipeline.source=tar-shards", "--pipeline.data=" + pattern});
  BOOST_REQUIRE_MESSAGE(r, why(r));
  // Per epoch: 200 + 49 (shard 3: the damaged member lost) + 20 (shard 5
  // up to the cut) trained; skipped: the damaged blocks, sample 25's
  // label without its image, and the cut sample.
  BOOST_TEST(r->samples_delivered == 2u * 269);
  BOOST_TEST(r->skipped_files == 2u * 3);
  BOOST_TEST(r->missing == 0u);
  BOOST_TEST(r->duplicates == 0u);
  BOOST_TEST(r->status == "ok");
  BOOST_REQUIRE(r->skipped_sources.size() == 2u);
  auto& a = r->skipped_sources[0].source == shard(3) ? r->skipped_sources[0]
                                                      : r->skipped_sources[1];
  auto& b = &a == &r->skipped_sources[0] ? r->skipped_sources[1]
                                          : r->skipped_sources[0];
  BOOST_TEST(a.source == shard(3));
  BOOST_TEST(a.samples == 2u * 2);
  BOOST_TEST(b.source == shard(5));
  BOOST_TEST(b.samples == 2u);
  BOOST_TEST(has(b.reason, "truncated"), b.reason);
  BOOST_REQUIRE(r->data_damage.size() == 2u);
  BOOST_TEST(has(r->data_damage[0], shard(3) + ": the tar header at byte "
                                       + std::to_string(at)),
             r->data_damage[0]);
  BOOST_TEST(has(r->data_damage[1], shard(5) + ": truncated"),
             r->data_damage[1]);
  BOOST_TEST(has(r->data_damage[1], "20 sample(s) indexed before the cut"),
             r->data_damage[1]);
}

BOOST_AUTO_TEST_CASE(shards_from_make_shards_train_each_sample_once_per_epoch) {
  scratch_dir dir{"shards-run"};
  export_small_set(dir.path + "/folder", 200);
  auto tool = std::string{STOKER_SOURCE_DIR} + "/tools/data/make-shards "
              + dir.path + "/folder " + dir.path + "/shards --per-shard 64";
  auto status = std::system((tool + " > /dev/null 2>&1").c_str());
  BOOST_REQUIRE_MESSAGE(WIFEXITED(status) && WEXITSTATUS(status) == 0, tool);
  auto shards = dir.path + "/shards/train-{000000..000003}.tar";
  auto listing = list_tar_shards(shards, 0);
  BOOST_REQUIRE_MESSAGE(listing, why(listing));
  BOOST_TEST(listing->counts == (std::vector<uint64_t>{64, 64, 64, 9}));
  BOOST_TEST(listing->num_classes == 10u);
  // The corrupt "PNG" is a member like the others: read, then skipped.
  BOOST_TEST(listing->problems.empty());
  auto r = train_small_cnn({"--pipeline.source=tar-shards",
                            "--pipeline.data=" + shards,
                            "--pipeline.shuffle-buffer=50"});
  BOOST_REQUIRE_MESSAGE(r, why(r));
  BOOST_TEST(r->missing == 0u);
  BOOST_TEST(r->duplicates == 0u);
  BOOST_TEST(r->skipped_files == 2u); // once per epoch
  BOOST_TEST(r->samples_delivered == 2u * 200);
  BOOST_REQUIRE(!r->skipped_file_examples.empty());
  BOOST_TEST(has(r->skipped_file_examples[0], ".tar:"));
  BOOST_REQUIRE(r->skipped_sources.size() == 1u);
  BOOST_TEST(has(r->skipped_sources[0].source, ".tar"));
  BOOST_TEST(r->steps == 2u * 7); // ceil(201 / 32) per epoch
  // A node whose shards differ from the head's is refused, by name.
  data_spec d;
  d.source = *parse_entry("tar-shards");
  d.data = shards;
  d.transforms = folder_spec(dir.path).transforms;
  source_spec src;
  BOOST_REQUIRE(!resolve_data(d, src, synthetic_spec{}, builtin_registry()));
  BOOST_TEST(src.shards == listing->counts);
  d.data = dir.path + "/shards/train-{000000..000002}.tar";
  auto other = open_dataset(d, split::train, synthetic_spec{},
                            builtin_registry());
  BOOST_REQUIRE(!other);
  BOOST_TEST(has(why(other), "holds other shards here than on the head"),
             why(other));
  // A test split in shards of its own: sized, and opened by a worker.
  auto test_tool = std::string{STOKER_SOURCE_DIR} + "/tools/data/make-shards "
                   + dir.path + "/folder " + dir.path
                   + "/test --per-shard 100 --prefix test";
  status = std::system((test_tool + " > /dev/null 2>&1").c_str());
  BOOST_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  d.data = shards;
  d.eval = true;
  d.eval_data = dir.path + "/test";
  source_spec with_test;
  BOOST_REQUIRE(!resolve_data(d, with_test, synthetic_spec{},
                              builtin_registry()));
  BOOST_TEST(d.eval_size == 201u);
  auto test_split = open_dataset(d, split::test, synthetic_spec{},
                                 builtin_registry());
  BOOST_REQUIRE_MESSAGE(test_split, why(test_split));
  BOOST_TEST((*test_split)->size() == 201u);
  // The tool's own errors: usage (2), a folder that is not one (1).
  auto tool_exit = [](const std::string& args) {
    auto st = std::system((std::string{STOKER_SOURCE_DIR}
                           + "/tools/data/make-shards " + args
                           + " > /dev/null 2>&1")
                            .c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  BOOST_TEST(tool_exit(dir.path + "/folder") == 2);
  BOOST_TEST(tool_exit(dir.path + "/folder /tmp/x --per-shard 0") == 2);
  BOOST_TEST(tool_exit(dir.path + "/nope " + dir.path + "/out") == 1);
}

BOOST_AUTO_TEST_CASE(the_fused_start_writes_the_batch_as_the_chain_makes_each_image) {
  // JPEGs through the ImageNet recipe: map_samples lets the fused pass
  // write into the batch's planes; apply() then a reorder gives the same.
  class jpegs final : public dataset {
  public:
    uint64_t size() const override { return 6; }
    int64_t label(uint64_t i) const override { return static_cast<int64_t>(i); }
    caf::expected<sample_input> read(uint64_t, uint64_t i) const override {
      cv::Mat img(180 + 20 * static_cast<int>(i), 240, CV_8UC3);
      cv::RNG gen{i + 1}; // the same image at every read
      gen.fill(img, cv::RNG::UNIFORM, 0, 255);
      cv::GaussianBlur(img, img, {7, 7}, 2.0);
      std::vector<uchar> bytes;
      cv::imencode(".jpg", img, bytes);
      sample_input in;
      in.encoded.assign(bytes.begin(), bytes.end());
      return in;
    }
    std::string name(uint64_t i) const override { return std::to_string(i); }
  } data;
  std::vector<transform_spec> specs;
  for (auto text : {"decode", "random-resized-crop(64)", "horizontal-flip",
                    "to-tensor", "normalize(0.485, 0.456, 0.406, 0.229, "
                                 "0.224, 0.225)"})
    specs.push_back(*parse_entry(text));
  auto chain = transform_chain::bind(specs, builtin_registry());
  BOOST_REQUIRE_MESSAGE(chain, why(chain));
  BOOST_REQUIRE(chain->fused_entries() == specs.size());
  work_item item;
  item.sample_ids = {0, 1, 2, 3, 4, 5};
  image_shape shape{64, 64, 3};
  chain_tally tally;
  auto batch = map_samples(data, *chain, shape, 3, item, {}, &tally);
  BOOST_REQUIRE(batch.size() == 6u);
  BOOST_REQUIRE(batch.checksums.size() == 6u); // stamped as written
  for (size_t i = 0; i < 6; ++i)
    BOOST_TEST(batch.checksums[i]
               == checksum64(batch.image(i), batch.image_bytes()));
  BOOST_TEST(tally.files == 6u);
  BOOST_TEST(tally.decoded_pixels < tally.file_pixels);
  std::vector<float> planes(64 * 64 * 3);
  for (uint64_t i = 0; i < 6; ++i) {
    auto hwc = chain->apply(*data.read(0, i), draw_key{3, 0, i});
    BOOST_REQUIRE(hwc);
    hwc_to_chw(hwc->ptr<float>(), planes.data(), 64, 64, 3);
    BOOST_TEST(std::equal(planes.begin(), planes.end(), batch.image(i)),
               "sample " << i);
  }
}

BOOST_AUTO_TEST_SUITE_END()
