#include <boost/test/unit_test.hpp>

#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include <set>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include "stoker/embed.hpp"
#include "stoker/errors.hpp"

// The embedding API as an embedder uses it (only public headers): a loop
// that takes a local run's batches, one that leaves early, one that
// fails, and settings an embedded run refuses.

using namespace stoker;
using namespace std::chrono_literals;

namespace {

// A small synthetic local run: `samples` 32x32 images in batches of 16,
// `epochs` epochs, 2 workers; the run's lines kept in `lines`.
struct small_run {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::shared_ptr<embedded_run> run;

  explicit small_run(uint64_t samples, uint64_t epochs,
                     std::vector<std::string> extra = {}) {
    embed_options options;
    options.args = {"--role=local", "--progress=off", "--trainer.count=1",
                    "--worker.count=2", "--pipeline.height=32",
                    "--pipeline.width=32", "--pipeline.batch-size=16",
                    "--pipeline.dataset-size=" + std::to_string(samples),
                    "--pipeline.epochs=" + std::to_string(epochs),
                    "--trainer.log-every=2"};
    options.args.insert(options.args.end(), extra.begin(), extra.end());
    options.log = [this](const log_record& r) {
      std::lock_guard<std::mutex> guard{mutex};
      lines.emplace_back(r.text);
    };
    auto opened = embedded_run::open(std::move(options), builtin_registry());
    if (!opened)
      BOOST_FAIL(describe(opened.error()));
    run = std::move(*opened);
  }

  // The next event, failing the test after 30 s without one.
  loop_event next(bool release_first) {
    for (int i = 0; i < 300; ++i)
      if (auto e = run->next(100ms, release_first && i == 0))
        return std::move(*e);
    BOOST_FAIL("no event from the run within 30 s");
    return {};
  }

  bool said(const std::string& part) {
    std::lock_guard<std::mutex> guard{mutex};
    for (auto& line : lines)
      if (line.find(part) != std::string::npos)
        return true;
    return false;
  }
};

// Gives a batch's buffer back, as a loop does when it is done with it.
void done_with(loop_event& e) {
  if (e.buffer_home)
    e.buffer_home(std::move(e.batch.data));
}

caf::error refusal(std::vector<std::string> args) {
  embed_options options;
  options.args = std::move(args);
  options.log = [](const log_record&) {};
  auto opened = embedded_run::open(std::move(options), builtin_registry());
  return opened ? caf::error{} : opened.error();
}

// This process's CPU time so far (every thread), seconds.
double cpu_seconds() {
  rusage usage{};
  BOOST_REQUIRE(::getrusage(RUSAGE_SELF, &usage) == 0);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec)
           + 1e-6 * static_cast<double>(t.tv_usec);
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

} // namespace

BOOST_AUTO_TEST_SUITE(embedded_run)

BOOST_AUTO_TEST_CASE(a_loop_gets_every_sample_once_with_its_bits) {
  small_run r{64, 2};
  BOOST_TEST((r.run->role() == role_kind::local));
  BOOST_TEST(r.run->shape().batch_size == 16u);
  BOOST_TEST(r.run->steps_per_epoch(1) == 4u);
  BOOST_REQUIRE(!r.run->start(std::nullopt, 0, 1));
  std::map<uint64_t, std::multiset<uint64_t>> seen; // epoch -> ids
  size_t phase_ends = 0;
  bool release = false;
  for (;;) {
    auto e = r.next(release);
    release = false;
    if (e.kind == loop_event::kind_type::finished) {
      BOOST_TEST(!e.error, describe(e.error));
      break;
    }
    if (e.kind == loop_event::kind_type::phase_end) {
      ++phase_ends;
      continue;
    }
    auto& b = e.batch;
    BOOST_TEST(e.pooled); // the buffer a worker filled, not a copy
    auto bytes = b.data.size() / b.size();
    for (size_t i = 0; i < b.size(); ++i) {
      seen[b.epoch].insert(b.sample_ids[i]);
      BOOST_TEST(sample_checksum(b.data.data() + i * bytes, bytes)
                 == b.checksums[i]);
    }
    done_with(e);
    release = true;
  }
  BOOST_TEST(phase_ends == 2u);
  BOOST_REQUIRE(seen.size() == 2u);
  for (auto& [epoch, ids] : seen) {
    BOOST_TEST(ids.size() == 64u, "epoch " << epoch);
    BOOST_TEST(std::set<uint64_t>(ids.begin(), ids.end()).size() == 64u);
  }
  BOOST_TEST(r.run->join(10s));
  auto report = r.run->report();
  BOOST_REQUIRE(report);
  BOOST_TEST(report->status == "ok");
  BOOST_TEST(report->exactly_once());
  BOOST_TEST(r.run->bytes_copied() == 0u);
  BOOST_TEST(r.said("Iteration 2:")); // the run's lines reach the handler
}

BOOST_AUTO_TEST_CASE(the_cpu_utilisation_a_report_gives_is_its_runs_alone) {
  // A process that idled (or worked) before its run, as an embedder's
  // does: the figure must not count that time (it did when it counted
  // from the process's start, or the library's load).
  std::this_thread::sleep_for(4s);
  small_run r{19200, 2, {"--worker.slowdown=4"}};
  auto cpu_before = cpu_seconds();
  auto wall_before = std::chrono::steady_clock::now();
  BOOST_REQUIRE(!r.run->start(std::nullopt, 0, 1));
  bool release = false;
  for (;;) {
    auto e = r.next(release);
    release = e.kind == loop_event::kind_type::batch;
    if (release)
      done_with(e);
    if (e.kind == loop_event::kind_type::finished)
      break;
  }
  double wall = std::chrono::duration<double>(
                  std::chrono::steady_clock::now() - wall_before)
                  .count();
  double cores = std::max(1u, std::thread::hardware_concurrency());
  double measured = (cpu_seconds() - cpu_before) / (wall * cores);
  BOOST_TEST(r.run->join(10s));
  auto report = r.run->report();
  BOOST_REQUIRE(report);
  BOOST_REQUIRE_EQUAL(report->hosts.size(), 1u);
  double said = report->hosts[0].cpu_utilisation;
  BOOST_TEST_MESSAGE("the run took " << wall << " s; CPU utilisation "
                                     << said << " said, " << measured
                                     << " measured around it");
  // The test's span holds the node's, with the start-up and the end on
  // either side: a little wider, never 4 s wider.
  BOOST_TEST(said >= 0.7 * measured, said << " said, " << measured
                                          << " measured");
  BOOST_TEST(said <= 1.3 * measured + 0.05, said << " said, " << measured
                                                 << " measured");
}

BOOST_AUTO_TEST_CASE(a_loop_that_leaves_on_purpose_stops_the_run) {
  small_run r{640, 1};
  BOOST_REQUIRE(!r.run->start(std::nullopt, 0, 1));
  auto first = r.next(false);
  BOOST_REQUIRE((first.kind == loop_event::kind_type::batch));
  done_with(first);
  BOOST_TEST(r.run->cursor().has_value());
  r.run->close("the loop closed its loader after one step", true);
  BOOST_TEST(r.run->join(20s));
  auto report = r.run->report();
  BOOST_REQUIRE(report);
  BOOST_TEST(report->status == "stopped");
  BOOST_TEST(report->duplicates == 0u);
  BOOST_TEST(report->missing > 0u); // what was never leased
}

BOOST_AUTO_TEST_CASE(a_loop_that_fails_ends_the_run_with_its_reason) {
  small_run r{640, 1};
  BOOST_REQUIRE(!r.run->start(std::nullopt, 0, 1));
  auto first = r.next(false);
  BOOST_REQUIRE((first.kind == loop_event::kind_type::batch));
  done_with(first);
  r.run->close("the loop raised ZeroDivisionError: in the loop", false);
  loop_event e;
  do
    e = r.next(false);
  while (e.kind != loop_event::kind_type::finished);
  BOOST_REQUIRE(e.error);
  BOOST_TEST(describe(e.error).find("ZeroDivisionError: in the loop")
               != std::string::npos,
             describe(e.error));
  BOOST_TEST(r.run->join(20s));
}

BOOST_AUTO_TEST_CASE(settings_an_embedded_loop_cannot_run_are_named) {
  auto head = refusal({"--role=head"});
  BOOST_TEST(is(head, errc::invalid_config));
  BOOST_TEST(describe(head).find("node.role = \"head\"") == 0u,
             describe(head));
  auto two = refusal({"--role=local", "--trainer.count=2"});
  BOOST_TEST(describe(two).find("trainer.count = 2") == 0u, describe(two));
  auto typo = refusal({"--role=local", "--pipeline.batch-sise=8"});
  BOOST_TEST(is(typo, errc::invalid_config));
  BOOST_TEST(describe(typo).find("batch-sise") != std::string::npos,
             describe(typo));
  small_run r{64, 1};
  auto bad = r.run->start(std::string{"not a cursor"}, 0, 1);
  BOOST_TEST(is(bad, errc::invalid_config));
  BOOST_TEST(describe(bad).find("the state_dict's cursor") != std::string::npos,
             describe(bad));
}

BOOST_AUTO_TEST_CASE(a_head_a_worker_and_a_trainer_run_in_one_process) {
  // Every role, as stoker-node runs it (options.loop = false), each its
  // own actor system, over loopback.
  auto port_file = "/tmp/stoker-embedded-" + std::to_string(::getpid())
                   + ".port";
  std::remove(port_file.c_str());
  auto node = [](std::vector<std::string> args) {
    embed_options options;
    options.args = std::move(args);
    options.args.insert(options.args.end(),
                        {"--trainer.device=sim", "--pipeline.height=32",
                         "--pipeline.width=32", "--progress=off"});
    options.log = [](const log_record&) {};
    options.loop = false;
    auto opened = stoker::embedded_run::open(std::move(options), builtin_registry());
    if (!opened)
      BOOST_FAIL(describe(opened.error()));
    BOOST_REQUIRE(!(*opened)->start(std::nullopt, 0, 1));
    return std::move(*opened);
  };
  auto head = node({"--role=head", "--cluster.port=0",
                    "--cluster.port-file=" + port_file,
                    "--cluster.nodes=[\"t-0:trainer\", \"w-a:worker:1\"]",
                    "--pipeline.dataset-size=96", "--pipeline.batch-size=16"});
  BOOST_TEST((head->role() == role_kind::head));
  std::string port;
  for (int i = 0; i < 200 && port.empty(); ++i) {
    std::this_thread::sleep_for(50ms);
    std::ifstream in{port_file};
    std::getline(in, port);
  }
  BOOST_REQUIRE(!port.empty());
  std::remove(port_file.c_str());
  auto at = "--cluster.head=127.0.0.1:" + port;
  auto trainer = node({"--role=trainer", "--node.name=t-0", at});
  auto worker = node({"--role=worker", "--node.name=w-a", "--worker.count=1",
                      at});
  for (auto* r : {&head, &trainer, &worker}) {
    std::optional<loop_event> e;
    for (int i = 0; i < 600; ++i)
      if ((e = (*r)->next(100ms)))
        break;
    BOOST_REQUIRE(e);
    BOOST_TEST((e->kind == loop_event::kind_type::finished));
    BOOST_TEST(!e->error, describe(e->error));
    BOOST_TEST(exit_code(e->error) == 0);
    BOOST_TEST((*r)->join(20s));
  }
  auto report = head->report();
  BOOST_REQUIRE(report);
  BOOST_TEST(report->samples_delivered == 96u);
  BOOST_TEST(report->exactly_once());
  BOOST_TEST(!trainer->report()); // a member's report is its head's
}

BOOST_AUTO_TEST_CASE(a_refused_setting_exits_2_and_a_failure_1) {
  BOOST_TEST(exit_code(caf::error{}) == 0);
  BOOST_TEST(exit_code(make_error(errc::invalid_config, "x")) == 2);
  BOOST_TEST(exit_code(make_error(errc::run_failure, "y")) == 1);
  // --help prints and opens nothing: no run, no error.
  embed_options options;
  options.args = {"--help"};
  options.loop = false;
  auto opened = stoker::embedded_run::open(std::move(options),
                                           builtin_registry());
  BOOST_REQUIRE(opened);
  BOOST_TEST(*opened == nullptr);
}

BOOST_AUTO_TEST_SUITE_END()
