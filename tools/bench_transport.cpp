// stoker-bench-transport: what moving a batch between two nodes costs.
// Two actor systems in this process, connected over loopback TCP through
// CAF's middleman (as a worker node and a trainer node are): throughput of
// 64-image 224x224x3 float32 batches, the serializer's own time per batch,
// and the round trip of an acknowledgement. Run through
// tools/bench-transport; not part of CI.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "stoker/batch_check.hpp"
#include "stoker/batch_codec.hpp"
#include "stoker/node_config.hpp"
#include "stoker/synthetic_mapper.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Acknowledges every batch with its id, as a trainer does.
caf::behavior sink(caf::event_based_actor*) {
  return {
    [](const stoker::image_batch& b) { return b.batch_id; },
    [](stoker::ack_atom, uint64_t id) { return id; },
  };
}

} // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int batches = argc > 1 ? std::atoi(argv[1]) : 20;
  auto wire = stoker::parse_dtype(argc > 2 ? argv[2] : "float32");
  if (batches <= 0 || !wire) {
    std::fprintf(stderr, "usage: stoker-bench-transport [BATCHES>0 "
                         "[float32|float16|bfloat16]]\n");
    return 2;
  }
  auto config = [] {
    auto cfg = std::make_unique<stoker::node_config>();
    auto loaded = cfg->load({"--role=trainer", "--cluster.head=127.0.0.1:1"});
    if (!loaded)
      std::abort();
    return cfg;
  };
  auto trainer_cfg = config();
  auto worker_cfg = config();
  caf::actor_system trainer_sys{*trainer_cfg};
  caf::actor_system worker_sys{*worker_cfg};
  auto target = trainer_sys.spawn(sink);
  auto port = trainer_sys.middleman().publish(target, 0, "127.0.0.1");
  auto remote = worker_sys.middleman().remote_actor(std::string{"127.0.0.1"},
                                                    *port);
  if (!port || !remote) {
    std::fprintf(stderr, "bench: cannot connect over loopback\n");
    return 1;
  }
  stoker::synthetic_spec data;
  stoker::work_item item;
  for (uint64_t i = 0; i < 64; ++i)
    item.sample_ids.push_back(i);
  auto batch = stoker::map_synthetic(data, item);
  double image_mb = static_cast<double>(batch.data.size()) / 1e6;
  stoker::encode_batch(batch, *wire);
  stoker::stamp_checksums(batch);
  double mb = static_cast<double>(batch.data.size()) / 1e6;
  std::printf("Stoker transport benchmark: %d batches of 64 x 224x224x3 "
              "images as %s (%.1f MB each on the wire), loopback TCP, CAF "
              "0.17 middleman\n\n",
              batches, stoker::to_string(*wire).c_str(), mb);
  // 1. The serializer alone, in memory.
  auto t0 = clock_type::now();
  std::vector<char> buf;
  for (int i = 0; i < 5; ++i) {
    buf.clear();
    caf::binary_serializer sink_ser{worker_sys, buf};
    if (auto err = sink_ser(batch))
      return 1;
    stoker::image_batch copy;
    caf::binary_deserializer source{worker_sys, buf};
    if (auto err = source(copy))
      return 1;
  }
  double ser_ms = seconds_since(t0) / 5 * 1e3;

  // 2. Round trip of an acknowledgement.
  caf::scoped_actor self{worker_sys};
  t0 = clock_type::now();
  constexpr int acks = 200;
  for (int i = 0; i < acks; ++i)
    self->request(*remote, caf::infinite, stoker::ack_atom::value,
                  uint64_t(i))
      .receive([](uint64_t) {}, [](caf::error&) {});
  double ack_ms = seconds_since(t0) / acks * 1e3;

  // 3. Batches, a window of 4 in flight, acknowledged one by one.
  t0 = clock_type::now();
  int sent = 0, acked = 0;
  for (; sent < std::min(batches, 4); ++sent) {
    batch.batch_id = static_cast<uint64_t>(sent);
    self->send(*remote, batch); // the sink's answer comes back as a message
  }
  while (acked < batches) {
    self->receive([&](uint64_t) { ++acked; });
    if (sent < batches) {
      batch.batch_id = static_cast<uint64_t>(sent++);
      self->send(*remote, batch);
    }
  }
  double secs = seconds_since(t0);
  std::printf("%-48s %10.2f\n", "throughput on the wire, GB/s",
              mb * batches / secs / 1e3);
  std::printf("%-48s %10.2f\n", "images delivered, float32 GB/s",
              image_mb * batches / secs / 1e3);
  std::printf("%-48s %10.1f\n", "time per batch on the wire, ms",
              secs / batches * 1e3);
  std::printf("%-48s %10.1f\n", "serialize + deserialize in memory, ms/batch",
              ser_ms);
  std::printf("%-48s %10.3f\n", "ack round trip over loopback, ms", ack_ms);
  self->send_exit(target, caf::exit_reason::user_shutdown);
  return 0;
}
