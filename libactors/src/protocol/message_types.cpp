#include "stoker/actors.hpp"

namespace stoker {

void register_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<work_item>("stoker::work_item")
    .add_message_type<std::vector<work_item>>("std::vector<stoker::work_item>")
    .add_message_type<image_batch>("stoker::image_batch")
    .add_message_type<worker_report>("stoker::worker_report")
    .add_message_type<worker_stats>("stoker::worker_stats")
    .add_message_type<batch_ack>("stoker::batch_ack")
    .add_message_type<worker_join>("stoker::worker_join")
    .add_message_type<steer_command>("stoker::steer_command")
    .add_message_type<loop_stopped>("stoker::loop_stopped")
    .add_message_type<policy_change>("stoker::policy_change")
    .add_message_type<window_change>("stoker::window_change")
    .add_message_type<trainer_hello>("stoker::trainer_hello")
    .add_message_type<group_spec>("stoker::group_spec")
    .add_message_type<group_plan>("stoker::group_plan")
    .add_message_type<series_point>("stoker::series_point")
    .add_message_type<std::vector<series_point>>(
      "std::vector<stoker::series_point>")
    .add_message_type<std::vector<uint64_t>>("std::vector<uint64_t>")
    .add_message_type<trainer_status>("stoker::trainer_status")
    .add_message_type<std::vector<trainer_status>>(
      "std::vector<stoker::trainer_status>")
    .add_message_type<trainer_stats>("stoker::trainer_stats")
    .add_message_type<router_summary>("stoker::router_summary")
    .add_message_type<rank_summary>("stoker::rank_summary")
    .add_message_type<std::vector<rank_summary>>(
      "std::vector<stoker::rank_summary>")
    .add_message_type<router_status>("stoker::router_status")
    .add_message_type<worker_status>("stoker::worker_status")
    .add_message_type<std::vector<worker_status>>(
      "std::vector<stoker::worker_status>")
    .add_message_type<source_actor>("stoker::source_actor")
    .add_message_type<worker_actor>("stoker::worker_actor")
    .add_message_type<trainer_actor>("stoker::trainer_actor")
    .add_message_type<router_actor>("stoker::router_actor")
    .add_message_type<membership_actor>("stoker::membership_actor")
    .add_message_type<pipeline_options>("stoker::pipeline_options")
    .add_message_type<batch_route>("stoker::batch_route")
    .add_message_type<trainer_endpoint>("stoker::trainer_endpoint")
    .add_message_type<std::vector<trainer_endpoint>>(
      "std::vector<stoker::trainer_endpoint>")
    .add_message_type<node_info>("stoker::node_info")
    .add_message_type<node_row>("stoker::node_row")
    .add_message_type<std::vector<node_row>>("std::vector<stoker::node_row>")
    .add_message_type<welcome>("stoker::welcome")
    .add_message_type<roster>("stoker::roster")
    .add_message_type<run_refusal>("stoker::run_refusal")
    .add_message_type<run_failure_note>("stoker::run_failure_note")
    .add_message_type<node_silent>("stoker::node_silent")
    .add_message_type<node_alive>("stoker::node_alive")
    .add_message_type<store_op>("stoker::store_op")
    .add_message_type<store_reply>("stoker::store_reply")
    .add_message_type<store_actor>("stoker::store_actor")
    .add_message_type<std::vector<worker_actor>>(
      "std::vector<stoker::worker_actor>")
    .add_message_type<std::vector<trainer_actor>>(
      "std::vector<stoker::trainer_actor>");
}

} // namespace stoker
