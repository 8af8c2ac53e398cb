#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "stoker/errors.hpp"
#include "routing/head_journal.hpp"

using namespace stoker;

namespace {

stoker::head_journal sample_journal() {
  stoker::head_journal j;
  j.run = "pipeline.dataset-size=4800 pipeline.seed=7";
  j.heads = 2;
  j.acked_batches = 58;
  j.acked_samples = 928;
  j.checkpoints = 3;
  j.run_ns = 1'500'000'000;
  j.acked_below = 50;
  j.acked_ids = {52, 53, 60};
  return j;
}

std::string error_of(const std::string& text) {
  auto j = decode_head_journal(text, "J");
  BOOST_REQUIRE(!j);
  return describe(j.error());
}

} // namespace

BOOST_AUTO_TEST_SUITE(head_journal)

BOOST_AUTO_TEST_CASE(a_journal_reads_back_as_written) {
  auto j = sample_journal();
  auto back = decode_head_journal(encode_head_journal(j), "J");
  BOOST_REQUIRE(static_cast<bool>(back));
  BOOST_TEST(back->run == j.run);
  BOOST_TEST(!back->finished);
  BOOST_TEST(back->heads == 2u);
  BOOST_TEST(back->acked_batches == 58u);
  BOOST_TEST(back->acked_samples == 928u);
  BOOST_TEST(back->checkpoints == 3u);
  BOOST_TEST(back->run_ns == 1'500'000'000u);
  BOOST_TEST(back->acked_below == 50u);
  BOOST_TEST(back->acked_ids == j.acked_ids);
}

BOOST_AUTO_TEST_CASE(a_damaged_journal_is_named_with_its_line) {
  auto good = encode_head_journal(sample_journal());
  BOOST_TEST(error_of("hello\n").find("J: the first line is not")
             != std::string::npos);
  auto cut = good.substr(0, good.find("acked_ids"));
  BOOST_TEST(error_of(cut).find("no acked_ids line") != std::string::npos);
  auto bad_number = good;
  bad_number.replace(bad_number.find("run_ns = 1500000000"), 19,
                     "run_ns = -1");
  BOOST_TEST(error_of(bad_number).find("line 8: run_ns = \"-1\"; expected a "
                                       "whole number")
               != std::string::npos,
             error_of(bad_number));
  BOOST_TEST(error_of(good + "extra = 1\n").find("unknown key \"extra\"")
             != std::string::npos);
  BOOST_TEST(error_of(good + "heads = 3\n").find("heads a second time")
             != std::string::npos);
  auto unordered = good;
  unordered.replace(unordered.find("52 53 60"), 8, "53 52 60");
  BOOST_TEST(error_of(unordered).find("acked_ids has \"52\"")
             != std::string::npos);
  auto below = good;
  below.replace(below.find("52 53 60"), 8, "12 53 60");
  BOOST_TEST(error_of(below).find("above acked_below") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_same_run_passes_and_another_is_named) {
  auto was = "pipeline.dataset-size=4800 pipeline.seed=7";
  BOOST_TEST(!check_same_run(was, was, "J"));
  auto err = check_same_run(was, "pipeline.dataset-size=4800 pipeline.seed=8",
                            "J");
  BOOST_TEST(describe(err).find("J journals a run with pipeline.seed = 7, "
                                "this head has 8")
             != std::string::npos,
             describe(err));
  err = check_same_run(was, std::string{was} + " pipeline.epochs=2", "J");
  BOOST_TEST(describe(err).find("pipeline.epochs = (none)")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_written_journal_replaces_the_old_whole) {
  char tmpl[] = "/tmp/stoker-journal-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  auto j = sample_journal();
  BOOST_REQUIRE(!write_head_journal(dir, j));
  j.finished = true;
  j.acked_ids.clear();
  BOOST_REQUIRE(!write_head_journal(dir, j));
  auto back = read_head_journal(dir);
  BOOST_REQUIRE(static_cast<bool>(back));
  BOOST_TEST(back->finished);
  BOOST_TEST(back->acked_ids.empty());
  BOOST_TEST(!std::ifstream{head_journal_path(dir) + ".tmp"});
  std::remove(head_journal_path(dir).c_str());
  ::rmdir(dir.c_str());
  auto missing = read_head_journal(dir);
  BOOST_REQUIRE(!missing);
  BOOST_TEST(describe(missing.error()).find("cannot read " + dir)
             != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
