#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <nlohmann/json.hpp>

#include "core/system_log.hpp"

using namespace stoker;

namespace {

struct said {
  log_level level;
  std::string text;
};

// A sink that keeps what it is handed.
log_sink keeping(std::vector<said>& into, log_level min_level) {
  return log_sink{log_origin{"w-a", "worker"}, min_level,
                  [&into](const log_record& r) {
                    into.push_back({r.level, std::string{r.text}});
                  }};
}

// What `fd` received while `say` ran (the fd pointed at a temporary file).
template <class F>
std::string captured(int fd, F say) {
  std::FILE* file = std::tmpfile();
  int saved = ::dup(fd);
  ::dup2(::fileno(file), fd);
  say();
  ::dup2(saved, fd);
  ::close(saved);
  std::rewind(file);
  std::string out;
  char buf[512];
  while (auto n = std::fread(buf, 1, sizeof buf, file))
    out.append(buf, n);
  std::fclose(file);
  return out;
}

struct carrying_config : caf::actor_system_config, log_carrier {};

} // namespace

BOOST_AUTO_TEST_SUITE(log_sink)

BOOST_AUTO_TEST_CASE(a_sink_hands_on_its_level_and_those_above) {
  std::vector<said> got;
  auto sink = keeping(got, log_level::warning);
  sink.debug("d");
  sink.info("i");
  sink.warning("w");
  sink.error("e");
  BOOST_REQUIRE(got.size() == 2u);
  BOOST_TEST((got[0].level == log_level::warning));
  BOOST_TEST(got[0].text == "w");
  BOOST_TEST(got[1].text == "e");
  BOOST_TEST(!sink.shows(log_level::info));
}

BOOST_AUTO_TEST_CASE(a_line_ends_where_it_is_said_without_its_newline) {
  std::vector<said> got;
  auto sink = keeping(got, log_level::debug);
  sink.info("head: node 'w-a' joined\n");
  BOOST_REQUIRE(got.size() == 1u);
  BOOST_TEST(got[0].text == "head: node 'w-a' joined");
}

BOOST_AUTO_TEST_CASE(a_stream_says_its_line_once_at_its_end) {
  std::vector<said> got;
  auto sink = keeping(got, log_level::info);
  {
    log_stream line{sink, log_level::info};
    line << "rank " << 0 << " = t-0/" << 1;
    BOOST_TEST(got.empty()); // not before the line is complete
  }
  log_stream{sink, log_level::debug} << "not shown " << 42;
  BOOST_REQUIRE(got.size() == 1u);
  BOOST_TEST(got[0].text == "rank 0 = t-0/1");
}

BOOST_AUTO_TEST_CASE(text_is_the_line_as_said) {
  log_origin who{"head", "head"};
  log_record r;
  r.text = "head: listening on 127.0.0.1:4242";
  r.at = std::chrono::system_clock::now();
  r.origin = &who;
  BOOST_TEST(format_record(r, log_format::text) == r.text);
}

BOOST_AUTO_TEST_CASE(json_is_one_object_naming_time_level_node_and_role) {
  log_origin who{"t-0", "trainer"};
  log_record r;
  r.level = log_level::warning;
  r.text = "a \"quoted\" line\twith a tab";
  r.at = std::chrono::system_clock::time_point{
    std::chrono::milliseconds{1796646625123}}; // 2026-12-07T12:30:25.123Z
  r.origin = &who;
  auto line = format_record(r, log_format::json);
  BOOST_TEST(line.find('\n') == std::string::npos);
  auto j = nlohmann::json::parse(line);
  BOOST_TEST(j.at("ts").get<std::string>() == "2026-12-07T12:30:25.123Z");
  BOOST_TEST(j.at("level").get<std::string>() == "warning");
  BOOST_TEST(j.at("node").get<std::string>() == "t-0");
  BOOST_TEST(j.at("role").get<std::string>() == "trainer");
  BOOST_TEST(j.at("msg").get<std::string>() == std::string{r.text});
}

BOOST_AUTO_TEST_CASE(standard_streams_put_problems_on_stderr_in_one_line) {
  auto sink = stoker::log_sink::standard_streams(log_origin{"h", "head"},
                                         log_level::info, log_format::text);
  std::string err;
  auto out = captured(1, [&] {
    err = captured(2, [&] {
      sink.info("head: 3 node(s) joined, running");
      sink.warning("stoker-node: cluster.insecure: ...");
      sink.error("stoker-node: run failed: x");
      sink.debug("below the level");
    });
  });
  BOOST_TEST(out == "head: 3 node(s) joined, running\n");
  BOOST_TEST(err == "stoker-node: cluster.insecure: ...\n"
                    "stoker-node: run failed: x\n");
  auto json = stoker::log_sink::standard_streams(log_origin{"h", "head"},
                                         log_level::info, log_format::json);
  auto line = captured(1, [&] { json.info("one"); });
  BOOST_REQUIRE(!line.empty());
  BOOST_TEST(line.back() == '\n');
  BOOST_TEST(nlohmann::json::parse(line).at("msg").get<std::string>()
             == "one");
}

BOOST_AUTO_TEST_CASE(an_actor_system_lends_its_configs_sink) {
  std::vector<said> got;
  carrying_config cfg;
  cfg.log = std::make_shared<const stoker::log_sink>(keeping(got, log_level::info));
  caf::actor_system sys{cfg};
  log_to(sys) << "router: " << 2 << " workers";
  log_of(sys).error("lost");
  BOOST_REQUIRE(got.size() == 2u);
  BOOST_TEST(got[0].text == "router: 2 workers");
  BOOST_TEST((got[1].level == log_level::error));
  caf::actor_system_config bare;
  caf::actor_system plain{bare};
  BOOST_TEST(log_of(plain).shows(log_level::info)); // stoker-node's default
  BOOST_TEST(!log_of(plain).shows(log_level::debug));
}

BOOST_AUTO_TEST_SUITE_END()
