// stoker-bench-transport: what moving a batch between two nodes costs.
// Two actor systems in this process, connected over loopback TCP (as a
// worker node and a trainer node are). Side by side in one run:
//   1. plain TCP moving the same bytes (the floor: two kernel copies),
//   2. Stoker's batch stream (batch_channel.hpp): frames from a worker's
//      thread to the trainer node's listener, which hands each batch to a
//      trainer actor that acknowledges it over CAF's middleman; once with
//      the run token only (no TLS, as on loopback) and once over mutual
//      TLS 1.3 (tls.* set: certificates from tools/ops/make-certs in CERTS),
//   3. the same batches as CAF messages through the middleman (the path a
//      node takes with transport.batch-stream = false),
// in ROUNDS rounds, each in a different order (medians and min-max
// printed), and the framework's own cost per batch: frame encode and
// decode, the routing decision, the lease/ack messages, and a TLS
// handshake (once per stream). Run through tools/bench/bench-transport; not part
// of CI.

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <csignal>
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
#include "transport/tls.hpp"

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

// Median and range of one figure over the rounds.
struct spread {
  double median = 0;
  double low = 0;
  double high = 0;
};

spread over_rounds(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto n = v.size();
  double mid = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {mid, v.front(), v.back()};
}

// This node's TLS context from tools/ops/make-certs' directory, or exits.
std::shared_ptr<const stoker::tls_context> tls_of(const std::string& dir,
                                                  const std::string& name) {
  stoker::tls_spec spec;
  spec.dir = dir;
  auto files = stoker::resolve_tls_files(spec, name);
  auto ctx = files ? stoker::tls_context::load(*files)
                   : caf::expected<std::shared_ptr<const stoker::tls_context>>{
                     files.error()};
  if (!ctx) {
    std::fprintf(stderr, "bench: %s\n", stoker::describe(ctx.error()).c_str());
    std::exit(1);
  }
  return *ctx;
}

void row(const char* what, double value, const char* format = "%10.2f") {
  std::printf("  %-56s ", what);
  std::printf(format, value);
  std::printf("\n");
}

} // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::signal(SIGPIPE, SIG_IGN); // OpenSSL's write() to a closed peer

  int batches = argc > 1 ? std::atoi(argv[1]) : 40;
  auto wire = stoker::parse_enum<stoker::dtype>(argc > 2 ? argv[2] : "float32");
  int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  std::string certs = argc > 4 ? argv[4] : "";
  if (batches <= 0 || !wire || rounds <= 0 || certs.empty()) {
    std::fprintf(stderr, "usage: stoker-bench-transport BATCHES>0 "
                         "float32|float16|bfloat16 ROUNDS>0 CERTS_DIR "
                         "(tools/bench/bench-transport fills these in)\n");
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
              "flight, %d round(s)\n\n",
              batches, stoker::to_string(*wire).c_str(), wire_gb * 1e3,
              window, rounds);

  // The batch stream, into a trainer actor that acknowledges each batch
  // with one CAF message to the worker side (as a trainer acks to the
  // router) and recycles its buffer: one listener and one sender per
  // security setting, kept across rounds as a run keeps its streams.
  caf::scoped_actor self{worker_sys};
  auto trainer = trainer_sys.spawn(
    [pool](caf::event_based_actor* me, caf::actor ack_to) -> caf::behavior {
      return {[=](stoker::image_batch& b) {
        pool->release(std::move(b.data));
        me->send(ack_to, b.batch_id);
      }};
    },
    caf::actor_cast<caf::actor>(self));
  auto token = stoker::random_token();
  if (!token) {
    std::fprintf(stderr, "bench: %s\n", stoker::describe(token.error()).c_str());
    return 1;
  }
  const stoker::stream_security token_only{*token, nullptr};
  const stoker::stream_security tls_trainer{*token, tls_of(certs, "trainer")};
  const stoker::stream_security tls_worker{*token, tls_of(certs, "worker")};
  auto open_stream = [&](const stoker::stream_security& listen_with,
                         const stoker::stream_security& send_with) {
    auto listener = stoker::batch_listener::start(
      "127.0.0.1", 0, batch.data.size(), listen_with, pool,
      [trainer](stoker::image_batch&& b) {
        caf::anon_send(trainer, std::move(b));
      },
      [](const std::string& what) {
        std::fprintf(stderr, "bench: %s\n", what.c_str());
      });
    if (!listener) {
      std::fprintf(stderr, "bench: %s\n",
                   stoker::describe(listener.error()).c_str());
      std::exit(1);
    }
    auto sender = stoker::batch_sender::connect(
      "127.0.0.1", (*listener)->port(), send_with);
    if (!sender) {
      std::fprintf(stderr, "bench: %s\n",
                   stoker::describe(sender.error()).c_str());
      std::exit(1);
    }
    return std::make_pair(std::move(*listener), std::move(*sender));
  };
  auto plain_stream = open_stream(token_only, token_only);
  auto tls_stream = open_stream(tls_trainer, tls_worker);
  auto through = [&](stoker::batch_sender& sender) {
    return [&](auto& b) {
      if (auto err = sender.send(b)) {
        std::fprintf(stderr, "bench: %s\n", stoker::describe(err).c_str());
        std::exit(1);
      }
    };
  };

  // Each round runs every path once, in an order of its own.
  enum path { tcp, token_stream, tls_path, caf_messages, paths };
  const char* names[paths] = {
    "plain TCP, same bytes (floor)",
    "batch stream, run token (no TLS) -> trainer actor",
    "batch stream, mutual TLS 1.3 -> trainer actor",
    "CAF messages through the middleman"};
  // CAF messages are slow: a quarter of the batches.
  const int counts[paths] = {batches, batches, batches,
                             std::max(4, batches / 4)};
  std::vector<double> ms_per_batch[paths];
  std::vector<int> order{tcp, token_stream, tls_path, caf_messages};
  for (int r = 0; r < rounds; ++r) {
    std::rotate(order.begin(), order.begin() + r % paths, order.end());
    if (r % 2 == 1)
      std::reverse(order.begin(), order.end());
    for (int p : order) {
      double secs = 0;
      switch (p) {
        case tcp:
          secs = plain_tcp_seconds(batch.data.size(), counts[p]);
          break;
        case token_stream:
          secs = windowed_seconds(self, batch, counts[p],
                                  through(plain_stream.second));
          break;
        case tls_path:
          secs = windowed_seconds(self, batch, counts[p],
                                  through(tls_stream.second));
          break;
        default:
          secs = windowed_seconds(self, batch, counts[p], [&](auto& b) {
            self->send(*remote, b); // the sink's answer comes back
          });
      }
      ms_per_batch[p].push_back(secs / counts[p] * 1e3);
    }
    std::fprintf(stderr, "bench: round %d of %d done\n", r + 1, rounds);
  }

  // The framework's own cost per batch.
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
  // A stream's TLS handshake (connect, verify both certificates, hello),
  // paid once per worker-to-trainer stream.
  constexpr int handshakes = 20;
  t0 = clock_type::now();
  for (int i = 0; i < handshakes; ++i)
    if (!stoker::batch_sender::connect("127.0.0.1", tls_stream.first->port(),
                                       tls_worker))
      return 1;
  double handshake_ms = seconds_since(t0) / handshakes * 1e3;

  std::printf("%-54s %10s %10s %18s\n", "path (median over rounds)",
              "GB/s wire", "GB/s f32", "ms/batch [min-max]");
  spread s[paths];
  for (int p = 0; p < paths; ++p) {
    s[p] = over_rounds(ms_per_batch[p]);
    double secs = s[p].median / 1e3;
    std::printf("%-54s %10.2f %10.2f %6.1f [%.1f-%.1f]\n", names[p],
                wire_gb / secs, image_gb / secs, s[p].median, s[p].low,
                s[p].high);
  }
  std::printf("\n");
  row("batch stream (token) / plain TCP throughput",
      s[tcp].median / s[token_stream].median);
  row("batch stream (TLS) / plain TCP throughput",
      s[tcp].median / s[tls_path].median);
  row("batch stream (TLS) / batch stream (token) throughput",
      s[token_stream].median / s[tls_path].median);
  row("batch stream (token) / CAF messages throughput",
      s[caf_messages].median / s[token_stream].median);
  std::printf("\nframework cost per batch, ms\n");
  row("frame head encode + decode (64 ids, labels, checksums)", frame_ms,
      "%10.4f");
  row("routing decision (least-loaded, 64 workers)", route_ms, "%10.4f");
  row("lease + ack: one CAF message each way over loopback", rtt_ms,
      "%10.4f");
  row("total (token stream)", frame_ms + route_ms + rtt_ms, "%10.4f");
  row("TLS: encryption beyond the token stream, per batch",
      s[tls_path].median - s[token_stream].median, "%10.4f");
  row("TLS: one stream's handshake (once per worker), ms", handshake_ms,
      "%10.4f");
  row("buffers recycled by the trainer node", static_cast<double>(pool->reused()),
      "%10.0f");
  self->send_exit(target, caf::exit_reason::user_shutdown);
  self->send_exit(trainer, caf::exit_reason::user_shutdown);
  return 0;
}
