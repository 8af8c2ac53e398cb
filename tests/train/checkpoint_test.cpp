#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "stoker/errors.hpp"
#include "core/batch_id_set.hpp"
#include "train/checkpoint.hpp"
#include "train/delivery_ledger.hpp"

using namespace stoker;

namespace {

struct temp_dir {
  std::string path = "/tmp/stoker-ckpt-test-" + std::to_string(::getpid());
  temp_dir() { ::mkdir(path.c_str(), 0755); }
  ~temp_dir() {
    std::remove(checkpoint_path(path).c_str());
    std::remove((checkpoint_path(path) + ".tmp").c_str());
    ::rmdir(path.c_str());
  }
};

checkpoint example() {
  checkpoint c;
  c.run.dataset_size = 100;
  c.run.epochs = 2;
  c.run.batch_size = 10;
  c.run.seed = 7;
  c.run.shuffle = true;
  c.step = 12;
  c.done_below = 11;
  c.done_ids = {13, 17};
  delivery_ledger ledger{100, 2};
  for (uint64_t id = 0; id < 37; ++id)
    ledger.record(id % 2, id);
  c.ledger_bits = ledger.pack();
  c.delivered = ledger.delivered();
  c.duplicates = ledger.duplicates();
  c.engine_state = std::string("model\0bytes", 11);
  return c;
}

bool mentions(const caf::error& err, const std::string& part) {
  return describe(err).find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(checkpoint)

BOOST_AUTO_TEST_CASE(round_trips_cursor_ledger_and_model) {
  temp_dir dir;
  auto saved = example();
  BOOST_REQUIRE(!write_checkpoint(saved, dir.path));
  auto loaded = read_checkpoint(dir.path);
  BOOST_REQUIRE(loaded);
  BOOST_TEST(loaded->step == 12u);
  BOOST_TEST(loaded->done_below == 11u);
  BOOST_TEST(loaded->done_ids == saved.done_ids);
  BOOST_TEST(loaded->ledger_bits == saved.ledger_bits);
  BOOST_TEST(loaded->engine_state == saved.engine_state);
  BOOST_TEST(!check_resumable(loaded->run, saved.run));
  // The ledger comes back with the same samples and counters.
  delivery_ledger ledger{100, 2};
  ledger.restore(loaded->ledger_bits, loaded->delivered, loaded->duplicates);
  BOOST_TEST(ledger.unique() == 37u);
  BOOST_TEST(!ledger.record(1, 35)); // delivered before the restart
  BOOST_TEST(ledger.record(0, 35));  // not: epoch 0 had only even ids
  // So does the set of batch ids.
  batch_id_set ids;
  ids.restore(loaded->done_below, loaded->done_ids);
  BOOST_TEST(ids.contains(10));
  BOOST_TEST(ids.contains(13));
  BOOST_TEST(!ids.contains(12));
}

BOOST_AUTO_TEST_CASE(a_damaged_or_foreign_file_is_refused_by_name) {
  temp_dir dir;
  BOOST_TEST(mentions(read_checkpoint(dir.path).error(), "no checkpoint at"));
  BOOST_REQUIRE(!write_checkpoint(example(), dir.path));
  auto path = checkpoint_path(dir.path);
  std::string bytes;
  {
    std::ifstream in{path, std::ios::binary};
    bytes.assign(std::istreambuf_iterator<char>{in}, {});
  }
  auto rewrite = [&](const std::string& content) {
    std::ofstream out{path, std::ios::binary | std::ios::trunc};
    out << content;
  };
  rewrite(bytes.substr(0, bytes.size() - 3));
  BOOST_TEST(mentions(read_checkpoint(dir.path).error(), "truncated"));
  rewrite("PK\3\4 a zip file, not ours");
  BOOST_TEST(mentions(read_checkpoint(dir.path).error(),
                      "is not a Stoker checkpoint"));
  auto future = bytes;
  future[7] = '3';
  rewrite(future);
  BOOST_TEST(mentions(read_checkpoint(dir.path).error(),
                      "checkpoint format '3'"));
  // Format 1 (before groups: no sequence, no ranks' cursors) still loads.
  auto old = bytes.substr(0, bytes.size() - 2 * sizeof(uint64_t));
  old[7] = '1';
  rewrite(old);
  auto loaded = read_checkpoint(dir.path);
  BOOST_REQUIRE(loaded);
  BOOST_TEST(loaded->step == example().step);
  BOOST_TEST(loaded->ranks.empty());
}

BOOST_AUTO_TEST_CASE(a_groups_checkpoint_holds_every_ranks_cursor) {
  temp_dir dir;
  auto c = example();
  c.next_seq = 41;
  for (uint64_t r = 0; r < 3; ++r) {
    auto cursor = example();
    cursor.engine_state.clear();
    cursor.next_seq = 40 + r;
    c.ranks.push_back(encode_checkpoint(cursor));
  }
  BOOST_REQUIRE(!write_checkpoint(c, dir.path));
  auto back = read_checkpoint(dir.path);
  BOOST_REQUIRE(back);
  BOOST_TEST(back->next_seq == 41u);
  BOOST_REQUIRE(back->ranks.size() == 3u);
  auto two = decode_checkpoint(back->ranks[2], "rank 2");
  BOOST_REQUIRE(two);
  BOOST_TEST(two->next_seq == 42u);
  BOOST_TEST(two->ledger_bits == c.ledger_bits);
  BOOST_TEST(mentions(decode_checkpoint("junk", "rank 1's cursor").error(),
                      "rank 1's cursor is not a Stoker checkpoint"));
}

BOOST_AUTO_TEST_CASE(resuming_another_run_names_the_setting_that_differs) {
  run_identity saved{100, 2, 10, 7, true};
  auto now = saved;
  now.batch_size = 20;
  BOOST_TEST(mentions(check_resumable(saved, now),
                      "pipeline.batch-size = 10, this run has 20"));
  now = saved;
  now.seed = 8;
  BOOST_TEST(mentions(check_resumable(saved, now), "pipeline.seed"));
}

BOOST_AUTO_TEST_CASE(an_unwritable_directory_is_an_error_not_a_crash) {
  auto err = write_checkpoint(example(), "/proc/no-such-dir/x");
  BOOST_TEST(is(err, errc::io_failure));
  BOOST_TEST(mentions(err, "/proc/no-such-dir/x/checkpoint.stoker.tmp"),
             describe(err));
}

BOOST_AUTO_TEST_SUITE_END()
