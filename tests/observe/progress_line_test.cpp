#include <boost/test/unit_test.hpp>

#include "observe/progress_line.hpp"
#include "support/node_processes.hpp"

// The progress line: its text, and when stoker-node shows it (a terminal)
// or keeps its Iteration lines (a pipe, a log).

using namespace stoker;
using namespace stoker_test;

namespace {

const std::vector<std::string> short_run = {
  "--trainer.device=sim",       "--pipeline.height=32",
  "--pipeline.width=32",        "--pipeline.dataset-size=1920",
  "--pipeline.batch-size=32",   "--trainer.sim-step-ms=25",
  "--trainer.log-every=10"};

} // namespace

BOOST_AUTO_TEST_SUITE(progress_line)

BOOST_AUTO_TEST_CASE(shows_done_total_rate_eta_and_idle_like_tqdm) {
  progress_figures f;
  f.done = 6784;
  f.total = 16000;
  f.rate_sps = 1058.4;
  f.idle = 0.0024;
  BOOST_TEST(format_progress(f)
             == "6,784/16,000 samples [########------------]  42% | 1,058 "
                "samples/s | ETA 0:09 | accelerator idle 0.2%");
  f.done = 16000;
  BOOST_TEST(format_progress(f).find("[####################] 100%")
             != std::string::npos,
             format_progress(f));
  BOOST_TEST(format_progress(f).find("ETA 0:00") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_figures_show_as_dashes_and_long_etas_in_hours) {
  progress_figures f;
  f.total = 1000;
  f.rate_sps = -1;
  BOOST_TEST(format_progress(f)
             == "0/1,000 samples [--------------------]   0% | - samples/s | "
                "ETA -");
  f.total = 10'000'000;
  f.done = 1;
  f.rate_sps = 1000;
  BOOST_TEST(format_progress(f).find("ETA 2:46:40") != std::string::npos,
             format_progress(f));
  progress_figures open_ended;
  open_ended.done = 12;
  open_ended.rate_sps = 3;
  BOOST_TEST(format_progress(open_ended) == "12 samples | 3 samples/s");
}

BOOST_AUTO_TEST_CASE(a_terminal_gets_one_updating_line_instead_of_iterations) {
  pty_child run;
  start_on_pty(run, STOKER_NODE_BINARY, short_run);
  auto until_run = run.expect("run: 1920 samples", 60s);
  BOOST_TEST(wait_exit(run.proc, 30s) == 0);
  BOOST_TEST(until_run.find("/1,920 samples [") != std::string::npos,
             until_run);
  BOOST_TEST(until_run.find("\r") != std::string::npos);
  BOOST_TEST(until_run.find("1,920/1,920 samples") != std::string::npos,
             until_run);
  BOOST_TEST(until_run.find("Iteration ") == std::string::npos, until_run);
  // The epoch line starts on a cleared line, not after the progress text.
  BOOST_TEST(until_run.find("\r\x1b[Kepoch 1:") != std::string::npos,
             until_run);
}

BOOST_AUTO_TEST_CASE(a_pipe_keeps_the_iteration_lines_and_off_turns_it_off) {
  auto log = tmp_path("progress-pipe.log");
  auto piped = start_node(short_run, log);
  BOOST_TEST(wait_exit(piped, 60s) == 0);
  auto text = read_file(log);
  BOOST_TEST(text.find("Iteration 10: avg time per step") != std::string::npos,
             text);
  BOOST_TEST(text.find("samples [") == std::string::npos, text);
  BOOST_TEST(text.find('\r') == std::string::npos);
  std::remove(log.c_str());
  auto args = short_run;
  args.push_back("--progress=off");
  pty_child quiet;
  start_on_pty(quiet, STOKER_NODE_BINARY, args);
  auto shown = quiet.expect("run: 1920 samples", 60s);
  BOOST_TEST(wait_exit(quiet.proc, 30s) == 0);
  BOOST_TEST(shown.find("Iteration 10:") != std::string::npos, shown);
  BOOST_TEST(shown.find("samples [") == std::string::npos, shown);
}

BOOST_AUTO_TEST_SUITE_END()
