#include <boost/test/unit_test.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "stoker/router_status.hpp"
#include "core/run_report.hpp"
#include "observe/job_metrics.hpp"
#include "support/prometheus_text.hpp"

using namespace stoker;

namespace {

// A cluster in the middle of a run: a trainer, two workers on one node,
// one lost worker.
job_view mid_run() {
  job_view job;
  auto& r = job.router;
  r.summary.samples_expected = 1000;
  r.summary.batches_leased = 12;
  r.summary.batches_acked = 9;
  r.summary.batches_released = 1;
  r.summary.lost_workers = {"w-b/1"};
  r.summary.wall_ns = 2'500'000'000;
  trainer_status t;
  t.rank = 0;
  t.node = "t-0";
  t.present = true;
  t.window = 6;
  t.in_flight = 3;
  t.window_widened = 2;
  t.window_narrowed = 1;
  t.window_held_group_waited = 4;
  t.window_last_change = "narrowed 7 -> 6: trainer never waited";
  r.trainers.push_back(t);
  for (auto name : {"w-a/0", "w-b/1"}) {
    worker_status w;
    w.load.name = name;
    w.load.alive = std::string{name} == "w-a/0";
    w.load.mailbox_depth = 2;
    w.load.outstanding_items = 1;
    w.load.items_leased = 7;
    w.load.samples_done = 96;
    r.workers.push_back(w);
  }
  trainer_stats ts;
  ts.grouped = true;
  ts.node = "t-0";
  ts.steps = 9;
  ts.samples_delivered = 288;
  ts.wait_ns = 1'500'000'000;
  ts.step_ns = 900'000'000;
  ts.batches_received = 10;
  ts.bytes_received = 10 * 38'535'168ull;
  ts.dropped_copies = 1;
  job.trainers.push_back(ts);
  worker_stats ws;
  ws.name = "w-a/0";
  ws.batches = 7;
  ws.busy_ns = 2'000'000'000;
  ws.alive_ns = 2'400'000'000;
  job.workers.push_back(ws);
  node_row head;
  head.name = "head";
  head.role = role_kind::head;
  head.state = "joined";
  node_row gone;
  gone.name = "w-b";
  gone.role = role_kind::worker;
  gone.state = "left";
  job.nodes = {head, gone};
  return job;
}

} // namespace

BOOST_AUTO_TEST_SUITE(job_metrics)

BOOST_AUTO_TEST_CASE(every_family_is_valid_text_format_with_one_prefix) {
  auto text = render_metrics(mid_run(), "1.2.3");
  auto s = stoker_test::parse_prometheus_text(text);
  BOOST_TEST(s.errors.empty(), text);
  for (auto& [family, type] : s.types)
    BOOST_TEST(family.rfind("stoker_", 0) == 0u, family);
  BOOST_TEST(s.value("stoker_build_info{version=\"1.2.3\"}") == 1);
}

BOOST_AUTO_TEST_CASE(before_any_view_of_the_job_what_is_known_is_served) {
  node_row self;
  self.name = "local";
  self.role = role_kind::local;
  self.state = "joined";
  auto text = render_pending_metrics("1.2.3", {self},
                                     "no view of the job yet;\ntry again");
  auto s = stoker_test::parse_prometheus_text(text);
  BOOST_TEST(s.errors.empty(), text);
  BOOST_TEST(s.value("stoker_build_info{version=\"1.2.3\"}") == 1);
  BOOST_TEST(s.value("stoker_job_view_ready") == 0);
  BOOST_TEST(s.value("stoker_node_up{node=\"local\",role=\"local\"}") == 1);
  BOOST_TEST(text.rfind("# no view of the job yet; try again\n", 0) == 0u,
             text);
  auto full = stoker_test::parse_prometheus_text(render_metrics(mid_run(),
                                                                "1.2.3"));
  BOOST_TEST(full.value("stoker_job_view_ready") == 1);
}

BOOST_AUTO_TEST_CASE(counts_come_from_the_actors_in_base_units) {
  auto s = stoker_test::parse_prometheus_text(render_metrics(mid_run(), "v"));
  BOOST_TEST(s.value("stoker_samples_delivered_total") == 288);
  BOOST_TEST(s.value("stoker_samples_expected") == 1000);
  BOOST_TEST(s.value("stoker_trainer_data_wait_seconds_total{trainer=\"t-0/0\"}")
             == 1.5);
  BOOST_TEST(s.value("stoker_trainer_steps_total{trainer=\"t-0/0\"}") == 9);
  BOOST_TEST(s.value("stoker_trainer_received_bytes_total{trainer=\"t-0/0\"}")
             == 385351680);
  BOOST_TEST(s.value("stoker_worker_busy_seconds_total{node=\"w-a\",worker=\"w-a/0\"}")
             == 2);
  BOOST_TEST(s.value("stoker_worker_up{node=\"w-b\",worker=\"w-b/1\"}") == 0);
  BOOST_TEST(s.value("stoker_router_leases_total{node=\"w-a\",worker=\"w-a/0\"}")
             == 7);
  BOOST_TEST(s.value("stoker_router_window{trainer=\"t-0/0\"}") == 6);
  BOOST_TEST(s.value("stoker_router_window_changes_total{trainer=\"t-0/0\","
                     "reason=\"widened\"}")
             == 2);
  BOOST_TEST(s.value("stoker_router_window_changes_total{trainer=\"t-0/0\","
                     "reason=\"narrowed\"}")
             == 1);
  BOOST_TEST(s.value("stoker_router_window_holds_total{trainer=\"t-0/0\","
                     "reason=\"group_waited\"}")
             == 4);
  BOOST_TEST(s.value("stoker_router_window_holds_total{trainer=\"t-0/0\","
                     "reason=\"workers_full\"}")
             == 0);
  BOOST_TEST(s.value("stoker_batches_released_total") == 1);
  BOOST_TEST(s.value("stoker_dropped_copies_total") == 1);
  BOOST_TEST(s.value("stoker_workers_lost_total") == 1);
  BOOST_TEST(s.value("stoker_node_up{node=\"w-b\",role=\"worker\"}") == 0);
  BOOST_TEST(s.value("stoker_run_seconds") == 2.5);
}

BOOST_AUTO_TEST_CASE(each_stage_sums_every_worker_a_lost_one_included) {
  auto job = mid_run();
  job.workers[0].stages = {{"decode + random-resized-crop(224)", 64, 640'000},
                           {"python(aug:wide)", 64, 128'000'000}};
  worker_stats lost;
  lost.name = "w-b/1";
  lost.stages = {{"python(aug:wide)", 32, 64'000'000}};
  job.router.summary.lost_worker_stats.push_back(lost);
  auto s = stoker_test::parse_prometheus_text(render_metrics(job, "v"));
  BOOST_TEST(s.value("stoker_stage_seconds_total{stage=\"python(aug:wide)\"}")
             == 0.192);
  BOOST_TEST(s.value("stoker_stage_samples_total{stage=\"python(aug:wide)\"}")
             == 96);
  BOOST_TEST(s.value("stoker_stage_samples_total{stage=\"decode + "
                     "random-resized-crop(224)\"}")
             == 64);
  // The report: the same sums, per sample.
  auto r = make_report(job.router.summary, job.trainers, job.workers);
  BOOST_REQUIRE_EQUAL(r.stages.size(), 2u);
  BOOST_TEST(r.stages[0].stage == "decode + random-resized-crop(224)");
  BOOST_TEST(r.stages[0].ms_per_sample == 0.01, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(r.stages[1].samples == 96u);
  BOOST_TEST(r.stages[1].ms_per_sample == 2.0, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(before_a_trainer_joins_the_families_are_there_and_empty) {
  job_view job;
  auto text = render_metrics(job, "v");
  auto s = stoker_test::parse_prometheus_text(text);
  BOOST_TEST(s.errors.empty(), text);
  BOOST_TEST(s.value("stoker_samples_delivered_total") == 0);
  BOOST_TEST(s.types.count("stoker_trainer_data_wait_seconds_total") == 1u);
  auto json = render_state_json(job, "v");
  BOOST_TEST(json.find("\"report\": null") != std::string::npos, json);
}

BOOST_AUTO_TEST_CASE(state_json_carries_the_report_and_the_live_view) {
  auto json = render_state_json(mid_run(), "v");
  for (auto key : {"\"report\": {", "\"samples_delivered\": 288",
                   "\"name\": \"w-a/0\"", "\"leases\": 7",
                   "\"window_last_change\": \"narrowed 7 -> 6: trainer "
                   "never waited\"",
                   "\"lost_workers\": [\"w-b/1\"]", "\"busy_ns\": 2000000000",
                   "\"samples_done\": 96"})
    BOOST_TEST(json.find(key) != std::string::npos, key << " in " << json);
}

BOOST_AUTO_TEST_CASE(docs_and_the_grafana_dashboard_name_exactly_the_metrics) {
  std::set<std::string> families;
  for (auto& [family, type] :
       stoker_test::parse_prometheus_text(render_metrics(mid_run(), "v")).types)
    families.insert(family);
  auto text_of = [](const std::string& path) {
    std::ifstream in{path};
    BOOST_REQUIRE_MESSAGE(in, "cannot read " << path);
    std::stringstream all;
    all << in.rdbuf();
    return all.str();
  };
  auto docs = text_of(STOKER_SOURCE_DIR "/docs/metrics.md");
  std::set<std::string> documented;
  std::regex row{R"(\n\| `(stoker_[a-z_]+)` \|)"};
  for (std::sregex_iterator i{docs.begin(), docs.end(), row}, end; i != end;
       ++i)
    documented.insert((*i)[1]);
  BOOST_TEST(documented == families);
  auto grafana = text_of(STOKER_SOURCE_DIR "/tools/ops/grafana-dashboard.json");
  std::regex name{R"(stoker_[a-z_]+)"};
  size_t used = 0;
  for (std::sregex_iterator i{grafana.begin(), grafana.end(), name}, end;
       i != end; ++i) {
    auto metric = i->str();
    ++used;
    BOOST_TEST(families.count(metric) == 1u,
               "the Grafana dashboard queries " << metric
                                                << ", which is not served");
  }
  BOOST_TEST(used > 10u);
}

BOOST_AUTO_TEST_SUITE_END()
