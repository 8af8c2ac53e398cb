#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <set>

#include "stoker/errors.hpp"
#include "data/shard_order.hpp"
#include "data/tar_shards.hpp"

#include "support/real_data.hpp"
#include "support/tar_writer.hpp"

using namespace stoker;
using namespace stoker_test;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string error_of(const caf::expected<std::vector<char>>& x) {
  return x ? std::string{} : describe(x.error());
}

} // namespace

BOOST_AUTO_TEST_SUITE(tar_shards)

BOOST_AUTO_TEST_CASE(groups_members_by_key_with_labels_from_cls_or_json) {
  scratch_dir dir{"tar-keys"};
  auto image = png_bytes(5);
  write_bytes(dir.path + "/a.tar",
              tar_member("x/0001.png", image) + tar_member("x/0001.cls", " 3\n")
                + tar_member("x/0002.jpg.png", image) // key x/0002
                + tar_member("x/0002.json", R"({"label": 7, "note": 1})")
                + tar_member("x/0002.txt", "a caption")
                + tar_member("README", "no extension: not a sample's")
                + tar_end());
  auto listing = list_tar_shards(dir.path + "/a.tar", 0);
  BOOST_REQUIRE_MESSAGE(listing, why(listing));
  BOOST_REQUIRE(listing->samples.size() == 2u);
  BOOST_TEST(listing->problems.empty());
  BOOST_TEST(listing->samples[0].label == 3);
  BOOST_TEST(listing->samples[1].label == 7);
  BOOST_TEST(listing->samples[1].member == "x/0002.jpg.png");
  BOOST_TEST(listing->num_classes == 8u);
  BOOST_TEST(listing->counts == std::vector<uint64_t>{2});
  auto bytes = read_tar_sample(*listing, 1);
  BOOST_REQUIRE_MESSAGE(bytes, error_of(bytes));
  BOOST_TEST(std::string(bytes->begin(), bytes->end()) == image);
  BOOST_TEST(tar_sample_name(*listing, 0) == dir.path + "/a.tar:x/0001.png");
}

BOOST_AUTO_TEST_CASE(reads_gnu_long_names_and_pax_records) {
  scratch_dir dir{"tar-long"};
  std::string long_key(150, 'k');
  auto image = png_bytes(1);
  auto pax = pax_record("path", "pax/" + long_key + ".png");
  write_bytes(dir.path + "/a.tar",
              tar_member("././@LongLink", long_key + ".png", 'L')
                + tar_member("cut-off-name.png", image)
                + tar_member("././@LongLink", long_key + ".cls", 'L')
                + tar_member("cut-off-name.cls", "1")
                + tar_member("PaxHeader", pax, 'x')
                + tar_member("ignored.png", image)
                + tar_member("pax/" + long_key.substr(0, 90) + ".cls", "2")
                + tar_end());
  auto listing = list_tar_shards(dir.path + "/a.tar", 0);
  BOOST_REQUIRE_MESSAGE(listing, why(listing));
  // The pax key is "pax/kkk...", the next .cls "pax/kkk..." cut at 90:
  // another key, so a sample without an image.
  BOOST_REQUIRE(listing->samples.size() == 3u);
  BOOST_TEST(listing->samples[0].member == long_key + ".png");
  BOOST_TEST(listing->samples[0].label == 1);
  BOOST_TEST(listing->samples[1].member == "pax/" + long_key + ".png");
  BOOST_TEST(listing->problems.count(1) == 1u); // no label for it
  BOOST_TEST(has(listing->problems.at(1), "no label"));
  BOOST_TEST(has(listing->problems.at(2), "no image member"));
  BOOST_TEST(static_cast<bool>(read_tar_sample(*listing, 0)));
}

BOOST_AUTO_TEST_CASE(a_key_without_an_image_is_a_sample_that_fails_naming_it) {
  scratch_dir dir{"tar-nonimage"};
  write_bytes(dir.path + "/a.tar",
              sample_members("0001", 0) + tar_member("0002.txt", "just text")
                + tar_member("0002.cls", "1") + sample_members("0003", 1)
                + tar_member("0004.png", png_bytes(2))
                + tar_member("0004.cls", "many") + tar_end());
  auto listing = list_tar_shards(dir.path + "/a.tar", 0);
  BOOST_REQUIRE_MESSAGE(listing, why(listing));
  BOOST_REQUIRE(listing->samples.size() == 4u);
  auto second = read_tar_sample(*listing, 1);
  BOOST_REQUIRE(!second);
  BOOST_TEST(is(second.error(), errc::io_failure), error_of(second));
  BOOST_TEST(has(error_of(second), "a.tar:0002: no image member"),
             error_of(second));
  BOOST_TEST(has(error_of(second), "0002.txt"));
  BOOST_TEST(static_cast<bool>(read_tar_sample(*listing, 2)));
  BOOST_TEST(has(error_of(read_tar_sample(*listing, 3)),
                 "0004.cls holds \"many\"; expected a class number"));
  BOOST_TEST(listing->num_classes == 2u); // only the readable samples count
}

BOOST_AUTO_TEST_CASE(a_truncated_shard_keeps_its_whole_samples_and_names_the_cut_one) {
  scratch_dir dir{"tar-truncated"};
  std::string bytes;
  for (int i = 0; i < 5; ++i)
    bytes += sample_members("000" + std::to_string(i), i);
  auto whole = bytes.size();
  bytes += sample_members("0005", 5);
  // Cut inside the last image's bytes.
  write_bytes(dir.path + "/cut.tar", bytes.substr(0, whole + 512 + 20));
  auto listing = list_tar_shards(dir.path + "/cut.tar", 0);
  BOOST_REQUIRE_MESSAGE(listing, why(listing));
  BOOST_REQUIRE(listing->samples.size() == 6u);
  for (uint64_t i = 0; i < 5; ++i)
    BOOST_TEST(static_cast<bool>(read_tar_sample(*listing, i)));
  auto cut = error_of(read_tar_sample(*listing, 5));
  BOOST_TEST(has(cut, "cut.tar:0005"), cut);
  BOOST_TEST(has(cut, "truncated: the shard ends at byte"), cut);
  // The shard itself is named as truncated, with what came before the cut.
  BOOST_REQUIRE(listing->damage.size() == 1u);
  BOOST_TEST(listing->damage[0]
             == dir.path + "/cut.tar: truncated: the shard ends at byte "
                  + std::to_string(whole + 512 + 20)
                  + ", inside 0005.png; 5 sample(s) indexed before the cut, "
                    "any after it are lost");
  // Cut inside a header: a sample of its own, named by the byte.
  write_bytes(dir.path + "/cut2.tar", bytes.substr(0, whole + 100));
  auto second = list_tar_shards(dir.path + "/cut2.tar", 0);
  BOOST_REQUIRE_MESSAGE(second, why(second));
  BOOST_REQUIRE(second->samples.size() == 6u);
  BOOST_TEST(has(error_of(read_tar_sample(*second, 5)),
                 "truncated inside a tar header at byte "
                   + std::to_string(whole)));
}

BOOST_AUTO_TEST_CASE(a_file_that_is_not_a_tar_is_refused_by_name) {
  scratch_dir dir{"tar-notatar"};
  write_bytes(dir.path + "/a.tar", std::string(2048, 'z'));
  auto listing = list_tar_shards(dir.path + "/a.tar", 0);
  BOOST_REQUIRE(!listing);
  auto text = why(listing);
  BOOST_TEST(has(text, "no readable sample"), text);
  BOOST_TEST(has(text, "fails its checksum"), text);
  // Damage after good samples: those stay, the rest is one named problem.
  auto header = tar_header("0002.png", 10);
  header[0] = 'Q'; // the checksum no longer holds
  auto first = sample_members("0001", 0);
  write_bytes(dir.path + "/b.tar",
              first + header + std::string(512, 'x') + tar_end());
  auto partly = list_tar_shards(dir.path + "/b.tar", 0);
  BOOST_REQUIRE_MESSAGE(partly, why(partly));
  BOOST_TEST(partly->samples.size() == 2u);
  BOOST_TEST(has(error_of(read_tar_sample(*partly, 1)),
                 "b.tar:(bytes " + std::to_string(first.size()) + "-"
                   + std::to_string(first.size() + 512 * 4)
                   + "): the tar header at byte "
                   + std::to_string(first.size()) + " fails its checksum"));
  BOOST_TEST(has(error_of(read_tar_sample(*partly, 1)),
                 "no header after them"));
}

BOOST_AUTO_TEST_CASE(a_damaged_header_loses_its_member_and_indexing_goes_on) {
  scratch_dir dir{"tar-resync"};
  std::string bytes;
  std::vector<size_t> starts;
  for (int i = 0; i < 50; ++i) {
    starts.push_back(bytes.size());
    bytes += sample_members("k" + std::to_string(100 + i), i % 5);
  }
  bytes += tar_end();
  // Garbage over the header of sample 20's image member, as a bad disk
  // block would leave it.
  auto at = starts[20];
  for (size_t i = 0; i < 512; ++i)
    bytes[at + i] = static_cast<char>((i * 131 + 7) & 0xff);
  write_bytes(dir.path + "/a.tar", bytes);
  auto listing = list_tar_shards(dir.path + "/a.tar", 0);
  BOOST_REQUIRE_MESSAGE(listing, why(listing));
  // Sample 20 keeps only its .cls (no image: a problem); the damaged
  // blocks are one problem sample; the 29 after them are read as before.
  uint64_t readable = 0;
  for (uint64_t i = 0; i < listing->samples.size(); ++i)
    readable += read_tar_sample(*listing, i) ? 1 : 0;
  BOOST_TEST(readable == 49u);
  BOOST_TEST(listing->samples.size() == 51u);
  BOOST_TEST(listing->samples.back().member == "k149.png");
  BOOST_REQUIRE(listing->damage.size() == 1u);
  auto& line = listing->damage.front();
  auto image_blocks = (png_bytes(20 % 5 + 1).size() + 511) / 512;
  auto next = at + 512 * (1 + image_blocks); // the .cls member's header
  auto range = std::to_string(at) + " to " + std::to_string(next);
  BOOST_TEST(has(line, dir.path + "/a.tar: the tar header at byte "
                         + std::to_string(at) + " fails its checksum"),
             line);
  BOOST_TEST(has(line, "bytes " + range + " unreadable"), line);
  BOOST_TEST(has(line, "indexing went on at the next header, at byte "
                         + std::to_string(next)),
             line);
  auto lost = error_of(read_tar_sample(*listing, 20));
  BOOST_TEST(has(lost, "a.tar:(bytes " + std::to_string(at) + "-"), lost);
}

BOOST_AUTO_TEST_CASE(patterns_expand_and_a_missing_shard_is_named) {
  scratch_dir dir{"tar-patterns"};
  auto pattern = write_shards(dir.path, 3, 4, 2);
  BOOST_TEST(pattern == dir.path + "/train-{000000..000002}.tar");
  auto listing = list_tar_shards(pattern, 0);
  BOOST_REQUIRE_MESSAGE(listing, why(listing));
  BOOST_TEST(listing->shards.size() == 3u);
  BOOST_TEST(listing->samples.size() == 12u);
  BOOST_TEST(listing->counts == (std::vector<uint64_t>{4, 4, 4}));
  BOOST_TEST(listing->num_classes == 2u);
  // The directory: the same shards, the same fingerprint.
  auto by_dir = list_tar_shards(dir.path, 0);
  BOOST_REQUIRE(by_dir);
  BOOST_TEST(by_dir->fingerprint == listing->fingerprint);
  auto listed = expand_shards(dir.path + "/train-{000000,000002}.tar");
  BOOST_REQUIRE(listed);
  BOOST_TEST(listed->back() == dir.path + "/train-000002.tar");
  auto missing = list_tar_shards(dir.path + "/train-{000000..000004}.tar", 0);
  BOOST_REQUIRE(!missing);
  BOOST_TEST(has(why(missing), "shard 4 of 5, \"" + dir.path
                                 + "/train-000003.tar\", is missing"),
             why(missing));
  BOOST_TEST(has(why(expand_shards("a-{1..x}.tar")), "range of whole numbers"));
  BOOST_TEST(has(why(expand_shards("a-{1..3.tar")), "without its '}'"));
  BOOST_TEST(has(why(expand_shards(dir.path + "/empty-dir-none")),
                 "is missing"));
  // A limit reads the first samples in shard order, and no further shard.
  auto limited = list_tar_shards(pattern, 6);
  BOOST_REQUIRE(limited);
  BOOST_TEST(limited->shards.size() == 2u);
  BOOST_TEST(limited->counts == (std::vector<uint64_t>{4, 2}));
  BOOST_TEST(limited->samples.back().member == "00000005.png");
}

BOOST_AUTO_TEST_CASE(the_shard_order_is_a_permutation_reading_few_shards_at_a_time) {
  // 40 shards of 25-75 samples, a buffer of 100.
  std::vector<uint64_t> counts;
  std::vector<uint64_t> shard_of;
  for (uint64_t s = 0; s < 40; ++s) {
    counts.push_back(25 + (s * 37) % 51);
    shard_of.insert(shard_of.end(), counts.back(), s);
  }
  shard_order order{counts, 100, 42};
  BOOST_TEST(order.size() == shard_of.size());
  std::vector<uint64_t> seen;
  for (uint64_t i = 0; i < order.size(); ++i)
    seen.push_back(order(i));
  auto sorted = seen;
  std::sort(sorted.begin(), sorted.end());
  for (uint64_t i = 0; i < sorted.size(); ++i)
    BOOST_REQUIRE(sorted[i] == i);
  // Each window of 100 positions touches at most 100 / 25 + 2 shards...
  for (uint64_t w = 0; w * 100 < seen.size(); ++w) {
    std::set<uint64_t> shards;
    for (auto i = w * 100; i < std::min<uint64_t>(seen.size(), w * 100 + 100);
         ++i)
      shards.insert(shard_of[seen[i]]);
    BOOST_TEST(shards.size() <= 6u);
  }
  // ... the shards come in another order than listed, shuffled within...
  BOOST_TEST(shard_of[seen[0]] != 0u);
  BOOST_TEST(!std::is_sorted(seen.begin(), seen.begin() + 20));
  // ... and another key is another order.
  shard_order other{counts, 100, 43};
  uint64_t same = 0;
  for (uint64_t i = 0; i < order.size(); ++i)
    same += other(i) == order(i);
  BOOST_TEST(same < order.size() / 10);
}

BOOST_AUTO_TEST_SUITE_END()
