#include "stoker/messages.hpp"

#include "stoker/actors.hpp"
#include "stoker/cluster.hpp"

namespace stoker {

size_t dtype_size(dtype t) noexcept {
  switch (t) {
    case dtype::float32:
      return 4;
    case dtype::float16:
    case dtype::bfloat16:
      return 2;
  }
  return 0;
}

image_batch float_batch_for(const work_item& item, layout order,
                            uint32_t height, uint32_t width,
                            uint32_t channels) {
  image_batch batch;
  batch.epoch = item.epoch;
  batch.batch_id = item.batch_id;
  batch.part = item.part;
  batch.type = dtype::float32;
  batch.order = order;
  batch.height = height;
  batch.width = width;
  batch.channels = channels;
  batch.data.resize(item.sample_ids.size() * batch.image_bytes());
  return batch;
}

void register_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<work_item>("stoker::work_item")
    .add_message_type<std::vector<work_item>>("std::vector<stoker::work_item>")
    .add_message_type<image_batch>("stoker::image_batch")
    .add_message_type<worker_report>("stoker::worker_report")
    .add_message_type<worker_stats>("stoker::worker_stats")
    .add_message_type<trainer_hello>("stoker::trainer_hello")
    .add_message_type<trainer_stats>("stoker::trainer_stats")
    .add_message_type<router_summary>("stoker::router_summary")
    .add_message_type<router_status>("stoker::router_status")
    .add_message_type<worker_status>("stoker::worker_status")
    .add_message_type<std::vector<worker_status>>(
      "std::vector<stoker::worker_status>")
    .add_message_type<source_actor>("stoker::source_actor")
    .add_message_type<worker_actor>("stoker::worker_actor")
    .add_message_type<trainer_actor>("stoker::trainer_actor")
    .add_message_type<router_actor>("stoker::router_actor")
    .add_message_type<registry_actor>("stoker::registry_actor")
    .add_message_type<run_config>("stoker::run_config")
    .add_message_type<batch_route>("stoker::batch_route")
    .add_message_type<trainer_endpoint>("stoker::trainer_endpoint")
    .add_message_type<std::vector<trainer_endpoint>>(
      "std::vector<stoker::trainer_endpoint>")
    .add_message_type<node_info>("stoker::node_info")
    .add_message_type<node_row>("stoker::node_row")
    .add_message_type<std::vector<node_row>>("std::vector<stoker::node_row>")
    .add_message_type<welcome>("stoker::welcome")
    .add_message_type<roster>("stoker::roster")
    .add_message_type<std::vector<worker_actor>>(
      "std::vector<stoker::worker_actor>")
    .add_message_type<std::vector<trainer_actor>>(
      "std::vector<stoker::trainer_actor>");
}

} // namespace stoker
