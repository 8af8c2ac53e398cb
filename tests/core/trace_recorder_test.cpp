#include <boost/test/unit_test.hpp>

#include <map>
#include <sstream>
#include <string>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include "core/trace_recorder.hpp"

// The console's `trace start FILE` timeline: Chrome trace JSON that
// Perfetto reads, a track per actor, spans past the bound dropped.

using namespace stoker;

BOOST_AUTO_TEST_SUITE(trace_recorder)

BOOST_AUTO_TEST_CASE(a_trace_is_chrome_trace_json_with_a_track_per_actor) {
  stoker::trace_recorder trace{3};
  trace.span("w-a/0", "batch", 1000000, 250000, 7);
  trace.span("trainer", "data wait", 1250000, 500, 7);
  trace.span("node \"q\"", "batch", 2000000, 10, 8); // names are escaped
  trace.span("trainer", "step", 1250500, 50000, 7);  // over the bound
  BOOST_TEST(trace.spans() == 3u);
  BOOST_TEST(trace.dropped() == 1u);
  std::istringstream json{trace.to_json()};
  boost::property_tree::ptree tree;
  BOOST_REQUIRE_NO_THROW(boost::property_tree::read_json(json, tree));
  std::map<std::string, int> names; // thread_name events: track -> tid
  int spans = 0;
  for (auto& [key, e] : tree.get_child("traceEvents")) {
    if (e.get<std::string>("ph") == "M")
      names[e.get<std::string>("args.name")] = e.get<int>("tid");
    else if (e.get<std::string>("ph") == "X") {
      ++spans;
      BOOST_TEST(e.get<double>("dur") >= 0.0);
    }
  }
  BOOST_TEST(spans == 3);
  BOOST_TEST(names.count("w-a/0") == 1u);
  BOOST_TEST(names.count("trainer") == 1u);
  BOOST_TEST(names.count("node \"q\"") == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
