// stoker-bench-transport: what moving a batch between two nodes costs.
// Two actor systems in this process, connected over loopback TCP (as a
// worker node and a trainer node are). Side by side in one run:
//   1. plain TCP moving the same bytes (the floor: two kernel copies),
//   2. Stoker's batch stream (batch_channel.hpp): frames from a worker's
//      thread to the trainer node's listener, which hands each batch to a
//      trainer actor that acknowledges it over CAF's middleman,
//   3. the same batches as CAF messages through the middleman (the path a
//      node takes with transport.batch-stream = false),
// and the framework's own cost per batch: frame encode and decode, the
// routing decision, and the lease/ack messages. Run through
// tools/bench-transport; not part of CI.

#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "data/synthetic_mapper.hpp"
#include "node/node_config.hpp"
#include "routing/routing_table.hpp"
#include "transport/batch_channel.hpp"
#include "transport/batch_check.hpp"
#include "transport/batch_codec.hpp"
#include "transport/batch_frame.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

constexpr int window = 4; // batches in flight, as a trainer's prefetch

// Acknowledges every batch with its id, as a trainer does.
caf::behavior sink(caf::event_based_actor*) {
  return {
    [](const stoker::image_batch& b) { return b.batch_id; },
    [](const stoker::batch_ack& ack) { return ack.batch_id; },
  };
}

// 1. The floor: the same bytes over a plain loopback TCP connection.
double plain_tcp_seconds(size_t bytes, int batches) {
  int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(at);
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&at), len) != 0
      || ::listen(lfd, 1) != 0
      || ::getsockname(lfd, reinterpret_cast<sockaddr*>(&at), &len) != 0)
    std::abort();
  std::thread reader{[&] {
    int fd = ::accept(lfd, nullptr, nullptr);
    std::vector<char> buf(bytes);
    for (int b = 0; b < batches; ++b)
      for (size_t got = 0; got < bytes;) {
        auto n = ::recv(fd, buf.data() + got, bytes - got, 0);
        if (n <= 0)
          std::abort();
        got += static_cast<size_t>(n);
      }
    ::close(fd);
  }};
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0)
    std::abort();
  std::vector<char> src(bytes, 1);
  auto t0 = clock_type::now();
  for (int b = 0; b < batches; ++b)
    for (size_t off = 0; off < bytes;) {
      auto n = ::send(fd, src.data() + off, bytes - off, MSG_NOSIGNAL);
      if (n <= 0)
        std::abort();
      off += static_cast<size_t>(n);
    }
  reader.join();
  auto secs = seconds_since(t0);
  ::close(fd);
  ::close(lfd);
  return secs;
}

// Sends `batches` copies of `batch` through `send`, keeping `window` in
// flight, each acknowledged by a message to `self`; returns the seconds.
template <class Send>
double windowed_seconds(caf::scoped_actor& self, stoker::image_batch& batch,
                        int batches, Send send) {
  auto t0 = clock_type::now();
  int sent = 0, acked = 0;
  while (acked < batches) {
    if (sent < batches && sent - acked < window) {
      batch.batch_id = static_cast<uint64_t>(sent++);
      send(batch);
    } else {
      self->receive([&](uint64_t) { ++acked; });
    }
  }
  return seconds_since(t0);
}

void row(const char* what, double value, const char* format = "%10.2f") {
  std::printf("  %-56s ", what);
  std::printf(format, value);
  std::printf("\n");
}

} // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int batches = argc > 1 ? std::atoi(argv[1]) : 40;
  auto wire = stoker::parse_enum<stoker::dtype>(argc > 2 ? argv[2] : "float32");
  if (batches <= 0 || !wire) {
    std::fprintf(stderr, "usage: stoker-bench-transport [BATCHES>0 "
                         "[float32|float16|bfloat16]]\n");
    return 2;
  }
  auto config = [] {
    auto cfg = std::make_unique<stoker::node_config>();
    auto loaded = cfg->load({"--role=trainer", "--cluster.head=127.0.0.1:1"},
                            stoker::builtin_registry());
    if (!loaded)
      std::abort();
    return cfg;
  };
  auto trainer_cfg = config();
  auto worker_cfg = config();
  caf::actor_system trainer_sys{*trainer_cfg};
  caf::actor_system worker_sys{*worker_cfg};
  auto pool = std::make_shared<stoker::buffer_pool>(window + 4);
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
  double image_gb = static_cast<double>(batch.data.size()) / 1e9;
  stoker::encode_batch(batch, *wire);
  stoker::stamp_checksums(batch);
  batch.producer = "bench-worker/0";
  double wire_gb = static_cast<double>(batch.data.size()) / 1e9;
  std::printf("Stoker transport benchmark: %d batches of 64 x 224x224x3 "
              "images as %s (%.1f MB each on the wire), loopback TCP, %d in "
              "flight\n\n",
              batches, stoker::to_string(*wire).c_str(), wire_gb * 1e3,
              window);

  // 1. Plain TCP.
  double tcp_s = plain_tcp_seconds(batch.data.size(), batches);

  // 2. The batch stream, into a trainer actor that acknowledges each batch
  // with one CAF message to the worker side (as a trainer acks to the
  // router) and recycles its buffer.
  caf::scoped_actor self{worker_sys};
  auto trainer = trainer_sys.spawn(
    [pool](caf::event_based_actor* me, caf::actor ack_to) -> caf::behavior {
      return {[=](stoker::image_batch& b) {
        pool->release(std::move(b.data));
        me->send(ack_to, b.batch_id);
      }};
    },
    caf::actor_cast<caf::actor>(self));
  stoker::stream_security security{std::string(64, 't'), nullptr};
  auto listener = stoker::batch_listener::start(
    "127.0.0.1", 0, batch.data.size(), security, pool,
    [trainer](stoker::image_batch&& b) {
      caf::anon_send(trainer, std::move(b));
    },
    [](const std::string& what) {
      std::fprintf(stderr, "bench: %s\n", what.c_str());
    });
  if (!listener) {
    std::fprintf(stderr, "bench: %s\n",
                 stoker::describe(listener.error()).c_str());
    return 1;
  }
  auto sender = stoker::batch_sender::connect("127.0.0.1",
                                              (*listener)->port(), security);
  if (!sender) {
    std::fprintf(stderr, "bench: %s\n",
                 stoker::describe(sender.error()).c_str());
    return 1;
  }
  double stream_s = windowed_seconds(self, batch, batches, [&](auto& b) {
    if (auto err = sender->send(b)) {
      std::fprintf(stderr, "bench: %s\n", stoker::describe(err).c_str());
      std::exit(1);
    }
  });

  // 3. CAF messages through the middleman (slow: a quarter of the batches).
  int caf_batches = std::max(4, batches / 4);
  double caf_s = windowed_seconds(self, batch, caf_batches, [&](auto& b) {
    self->send(*remote, b); // the sink's answer comes back as a message
  });

  // 4. The framework's own cost per batch.
  constexpr int reps = 2000;
  std::vector<char> head;
  stoker::image_batch decoded;
  auto t0 = clock_type::now();
  for (int i = 0; i < reps; ++i) {
    stoker::encode_frame_head(batch, head);
    auto prefix = stoker::parse_frame_prefix(head.data(), batch.data.size());
    if (!prefix
        || stoker::decode_frame_header(head.data() + stoker::frame_prefix_bytes,
                                       prefix->header_bytes,
                                       prefix->data_bytes, decoded))
      return 1;
  }
  double frame_ms = seconds_since(t0) / reps * 1e3;
  stoker::routing_table table{stoker::routing_policy::least_loaded};
  for (int w = 0; w < 64; ++w)
    table.add_worker("w" + std::to_string(w));
  t0 = clock_type::now();
  for (int i = 0; i < reps; ++i) {
    auto w = *table.pick(64);
    table.on_lease(w, 64);
    table.on_done(w, 64, 100'000'000, 0, 0);
  }
  double route_ms = seconds_since(t0) / reps * 1e3;
  constexpr int acks = 500;
  t0 = clock_type::now();
  for (int i = 0; i < acks; ++i) {
    stoker::batch_ack ack;
    ack.batch_id = static_cast<uint64_t>(i);
    self->send(*remote, ack);
    self->receive([](uint64_t) {});
  }
  double rtt_ms = seconds_since(t0) / acks * 1e3;

  std::printf("%-54s %10s %10s %10s\n", "path", "GB/s wire", "GB/s f32",
              "ms/batch");
  auto line = [&](const char* what, double secs, int n) {
    std::printf("%-54s %10.2f %10.2f %10.1f\n", what, wire_gb * n / secs,
                image_gb * n / secs, secs / n * 1e3);
  };
  line("plain TCP, same bytes (floor)", tcp_s, batches);
  line("Stoker batch stream -> trainer actor, acked over CAF", stream_s,
       batches);
  line("CAF messages through the middleman", caf_s, caf_batches);
  std::printf("\n");
  row("batch stream / plain TCP throughput", tcp_s / stream_s);
  row("batch stream / CAF messages throughput",
      (caf_s / caf_batches) / (stream_s / batches));
  std::printf("\nframework cost per batch, ms\n");
  row("frame head encode + decode (64 ids, labels, checksums)", frame_ms,
      "%10.4f");
  row("routing decision (least-loaded, 64 workers)", route_ms, "%10.4f");
  row("lease + ack: one CAF message each way over loopback", rtt_ms,
      "%10.4f");
  row("total", frame_ms + route_ms + rtt_ms, "%10.4f");
  row("buffers recycled by the trainer node", static_cast<double>(pool->reused()),
      "%10.0f");
  self->send_exit(target, caf::exit_reason::user_shutdown);
  self->send_exit(trainer, caf::exit_reason::user_shutdown);
  return 0;
}
