#include <boost/test/unit_test.hpp>

#include <cmath>

#include "observe/metrics_text.hpp"

using namespace stoker;

BOOST_AUTO_TEST_SUITE(metrics_text)

BOOST_AUTO_TEST_CASE(writes_help_type_and_samples_in_the_text_format) {
  stoker::metrics_text m;
  m.family("stoker_trainer_steps_total", metric_kind::counter,
           "training steps");
  m.sample({{"trainer", "t-0/0"}}, 42);
  m.sample({{"trainer", "t-1/1"}}, 7);
  m.family("stoker_router_window", metric_kind::gauge, "in flight");
  m.sample(8);
  BOOST_TEST(m.text()
             == "# HELP stoker_trainer_steps_total training steps\n"
                "# TYPE stoker_trainer_steps_total counter\n"
                "stoker_trainer_steps_total{trainer=\"t-0/0\"} 42\n"
                "stoker_trainer_steps_total{trainer=\"t-1/1\"} 7\n"
                "# HELP stoker_router_window in flight\n"
                "# TYPE stoker_router_window gauge\n"
                "stoker_router_window 8\n");
}

BOOST_AUTO_TEST_CASE(escapes_label_values_and_help_text) {
  stoker::metrics_text m;
  m.family("stoker_x", metric_kind::gauge, "a \\ b\nc \"q\"");
  m.sample({{"node", "a\"b\\c\nd"}, {"worker", "w"}}, 1);
  BOOST_TEST(m.text()
             == "# HELP stoker_x a \\\\ b\\nc \"q\"\n"
                "# TYPE stoker_x gauge\n"
                "stoker_x{node=\"a\\\"b\\\\c\\nd\",worker=\"w\"} 1\n");
}

BOOST_AUTO_TEST_CASE(writes_integers_fractions_and_special_values) {
  BOOST_TEST(metric_value(0) == "0");
  BOOST_TEST(metric_value(123456789012.0) == "123456789012");
  BOOST_TEST(metric_value(0.25) == "0.25");
  BOOST_TEST(metric_value(1.0 / 3) == "0.333333333");
  BOOST_TEST(metric_value(std::nan("")) == "NaN");
  BOOST_TEST(metric_value(HUGE_VAL) == "+Inf");
  BOOST_TEST(metric_value(-HUGE_VAL) == "-Inf");
}

BOOST_AUTO_TEST_SUITE_END()
