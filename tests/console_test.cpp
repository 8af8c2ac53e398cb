#include <boost/test/unit_test.hpp>

#include "stoker/console_commands.hpp"
#include "stoker/console_server.hpp"
#include "stoker/console_session.hpp"
#include "stoker/errors.hpp"

using namespace stoker;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string error_of(std::string_view line) {
  auto cmd = parse_console_line(line);
  BOOST_REQUIRE(!cmd);
  return describe(cmd.error());
}

} // namespace

BOOST_AUTO_TEST_SUITE(console)

BOOST_AUTO_TEST_CASE(lines_split_into_a_known_command_and_its_arguments) {
  auto cmd = parse_console_line("  set\trouter.policy   round-robin \r\n");
  BOOST_REQUIRE(cmd);
  BOOST_TEST(cmd->name == "set");
  BOOST_TEST(cmd->args
             == (std::vector<std::string>{"router.policy", "round-robin"}));
  auto empty = parse_console_line("   ");
  BOOST_REQUIRE(empty);
  BOOST_TEST(empty->name.empty());
}

BOOST_AUTO_TEST_CASE(bad_lines_answer_with_the_usage) {
  BOOST_TEST(contains(error_of("dance"), "unknown command 'dance'"));
  BOOST_TEST(contains(error_of("set router.policy"),
                      "usage: set router.policy POLICY"));
  BOOST_TEST(contains(error_of("set cluster.port 9"), "cannot set"));
  BOOST_TEST(contains(error_of("stats --xml"), "usage: stats --json"));
  BOOST_TEST(contains(error_of("nodes extra"), "takes 0 argument(s), got 1"));
}

BOOST_AUTO_TEST_CASE(help_lists_every_command_and_explains_one) {
  auto all = console_help();
  BOOST_REQUIRE(all);
  for (auto& spec : console_command_specs())
    BOOST_TEST(contains(*all, std::string{spec.usage}), spec.name);
  auto one = console_help("router");
  BOOST_REQUIRE(one);
  BOOST_TEST(contains(*one, "expected delay"));
  BOOST_TEST(!console_help("dance"));
  BOOST_TEST(complete_command("s")
             == (std::vector<std::string>{"set", "stats", "shutdown"}));
}

BOOST_AUTO_TEST_CASE(tables_align_columns_and_right_align_numbers) {
  auto t = format_table({"name", "n"}, {{"a", "5"}, {"longer", "1234"}});
  BOOST_TEST(t == "name    n\n"
                  "a          5\n"
                  "longer  1234\n");
}

BOOST_AUTO_TEST_CASE(numbers_read_like_a_person_writes_them) {
  BOOST_TEST(human_number(950) == "950");
  BOOST_TEST(human_number(1234567) == "1.23M");
  BOOST_TEST(human_number(0.5) == "0.5");
  BOOST_TEST(human_number(12345) == "12.3k");
  BOOST_TEST(human_bytes(512) == "512 B");
  BOOST_TEST(human_bytes(1536) == "1.5 KiB");
  BOOST_TEST(human_bytes(38535168) == "36.8 MiB");
  BOOST_TEST(human_duration_ns(850000) == "850 us");
  BOOST_TEST(human_duration_ns(12345678) == "12.3 ms");
  BOOST_TEST(human_duration_ns(4200000000) == "4.20 s");
}

BOOST_AUTO_TEST_CASE(router_view_says_why_a_worker_gets_no_work) {
  router_status st;
  st.summary.policy = "least-loaded";
  st.summary.window = 8;
  st.summary.window_max = 27;
  st.in_flight = 3;
  st.batch_bytes = 1 << 20;
  st.trainer_present = true;
  worker_status up;
  up.name = "a/0";
  up.host = "gpu";
  up.local = true;
  up.items_done = 30;
  up.rate_sps = 550;
  worker_status down = up;
  down.name = "b/0";
  down.alive = false;
  down.local = false;
  down.items_done = 10;
  worker_status late = up;
  late.name = "c/0";
  late.overdue_ms = 420;
  late.items_done = 0;
  st.workers = {up, down, late};
  auto text = format_router(st);
  BOOST_TEST(contains(text, "in flight 3 batch(es) (3.0 MiB)"), text);
  BOOST_TEST(contains(text, "gpu (trainer's)"), text);
  BOOST_TEST(contains(text, "75%"), text); // a/0: 30 of 40 batches
  BOOST_TEST(contains(text, "down"), text);
  BOOST_TEST(contains(text, "stale report (420 ms late)"), text);
}

BOOST_AUTO_TEST_CASE(a_console_beyond_loopback_needs_a_token) {
  BOOST_TEST(is_loopback("127.0.0.1"));
  BOOST_TEST(is_loopback("localhost"));
  BOOST_TEST(is_loopback("::1"));
  BOOST_TEST(!is_loopback("0.0.0.0"));
  BOOST_TEST(!is_loopback("10.1.2.3"));
}

BOOST_AUTO_TEST_SUITE_END()
