#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stoker/errors.hpp"
#include "support/dev_certs.hpp"
#include "data/synthetic_mapper.hpp"
#include "transport/batch_channel.hpp"
#include "transport/batch_check.hpp"
#include "transport/batch_frame.hpp"

using namespace stoker;
using namespace std::chrono_literals;

namespace {

image_batch sample(uint64_t id, uint32_t images, uint32_t side) {
  synthetic_spec data;
  data.height = side;
  data.width = side;
  work_item item;
  item.batch_id = id;
  for (uint32_t i = 0; i < images; ++i)
    item.sample_ids.push_back(id * 100 + i);
  auto batch = map_synthetic(data, item);
  stamp_checksums(batch);
  batch.producer = "w/" + std::to_string(id);
  return batch;
}

// What a listener handed over, collected across its threads.
struct inbox {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<image_batch> batches;
  std::vector<std::string> errors;
  std::set<std::thread::id> batch_threads; // where on_batch ran

  batch_listener::batch_handler on_batch() {
    return [this](image_batch&& b) {
      std::lock_guard<std::mutex> guard{mutex};
      batch_threads.insert(std::this_thread::get_id());
      batches.push_back(std::move(b));
      changed.notify_all();
    };
  }
  batch_listener::error_handler on_error() {
    return [this](const std::string& what) {
      std::lock_guard<std::mutex> guard{mutex};
      errors.push_back(what);
      changed.notify_all();
    };
  }
  // Waits until `pred` holds or 10 s passed; returns whether it holds.
  template <class Pred>
  bool wait(Pred pred) {
    std::unique_lock<std::mutex> guard{mutex};
    return changed.wait_for(guard, 10s, pred);
  }
};

// Every listener of these tests takes this token (and no TLS unless
// given).
const std::string token(64, 'k');

stream_security plain() {
  return stream_security{token, nullptr, 2s};
}

std::unique_ptr<batch_listener> listen(inbox& box,
                                       std::shared_ptr<buffer_pool> pool,
                                       uint64_t max_bytes = 64u << 20,
                                       stream_security security = plain()) {
  auto l = batch_listener::start("127.0.0.1", 0, max_bytes,
                                 std::move(security), std::move(pool),
                                 box.on_batch(), box.on_error());
  BOOST_REQUIRE_MESSAGE(l, (l ? "" : describe(l.error())));
  return std::move(*l);
}

// A plain TCP connection, for peers that do not follow the protocol.
int raw_connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to))
                == 0);
  return fd;
}

// A raw connection that has said the hello with the right token.
int raw_connect_with_hello(uint16_t port) {
  int fd = raw_connect(port);
  std::string hello = "STKB" + token;
  BOOST_REQUIRE(::send(fd, hello.data(), hello.size(), 0)
                == static_cast<ssize_t>(hello.size()));
  return fd;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(batch_channel)

BOOST_AUTO_TEST_CASE(delivers_batches_whole_and_in_order_over_loopback) {
  inbox box;
  auto pool = std::make_shared<buffer_pool>();
  auto listener = listen(box, pool);
  auto sender = batch_sender::connect("127.0.0.1", listener->port(), plain());
  BOOST_REQUIRE_MESSAGE(sender, (sender ? "" : describe(sender.error())));
  // 8 MB batches: more than a socket buffer takes at once, so the sender
  // must resume partial writes.
  std::vector<image_batch> sent;
  for (uint64_t id = 1; id <= 3; ++id)
    sent.push_back(sample(id, 14, 224));
  sent.push_back(sample(4, 0, 224)); // an empty batch is a frame too
  for (auto& b : sent)
    BOOST_REQUIRE(!sender->send(b));
  BOOST_REQUIRE(box.wait([&] { return box.batches.size() == sent.size(); }));
  batch_expectation expect;
  expect.order = layout::hwc;
  for (size_t i = 0; i < sent.size(); ++i) {
    auto& got = box.batches[i];
    BOOST_TEST(got.batch_id == sent[i].batch_id);
    BOOST_TEST(got.producer == sent[i].producer);
    BOOST_TEST((got.data == sent[i].data));
    if (!sent[i].sample_ids.empty()) { // check_batch wants samples
      auto err = check_batch(got, expect); // checksums included
      BOOST_TEST(!err, describe(err));
    }
  }
  BOOST_TEST(box.errors.empty());
  BOOST_TEST(listener->frames() == sent.size());
}

BOOST_AUTO_TEST_CASE(compares_each_image_with_its_checksum_as_it_arrives) {
  // Marked verified only when every image matched; a batch changed on the
  // way arrives unmarked, so the trainer's check names its sample.
  inbox box;
  auto listener = listen(box, std::make_shared<buffer_pool>());
  auto sender = batch_sender::connect("127.0.0.1", listener->port(), plain());
  BOOST_REQUIRE_MESSAGE(sender, (sender ? "" : describe(sender.error())));
  auto good = sample(1, 6, 224);
  auto changed = sample(2, 6, 224);
  changed.data[4 * changed.image_bytes() + 17] ^= 4; // image 4
  BOOST_REQUIRE(!sender->send(good));
  BOOST_REQUIRE(!sender->send(changed));
  BOOST_REQUIRE(box.wait([&] { return box.batches.size() == 2; }));
  BOOST_TEST(box.batches[0].verified_here);
  BOOST_TEST(!box.batches[1].verified_here);
  batch_expectation expect;
  expect.order = layout::hwc;
  BOOST_TEST(!check_batch(box.batches[0], expect));
  auto err = check_batch(box.batches[1], expect);
  BOOST_TEST(contains(describe(err), "sample 204: checksum mismatch"),
             describe(err));
}

BOOST_AUTO_TEST_CASE(received_buffers_come_from_the_pool) {
  inbox box;
  auto pool = std::make_shared<buffer_pool>();
  auto listener = listen(box, pool);
  auto sender = batch_sender::connect("127.0.0.1", listener->port(), plain());
  BOOST_REQUIRE(sender);
  BOOST_REQUIRE(!sender->send(sample(1, 2, 32)));
  BOOST_REQUIRE(box.wait([&] { return box.batches.size() == 1; }));
  const char* storage = box.batches[0].data.data();
  pool->release(std::move(box.batches[0].data));
  BOOST_REQUIRE(!sender->send(sample(2, 2, 32)));
  BOOST_REQUIRE(box.wait([&] { return box.batches.size() == 2; }));
  BOOST_TEST(box.batches[1].data.data() == storage);
  BOOST_TEST(pool->reused() == 1u);
}

BOOST_AUTO_TEST_CASE(a_peer_speaking_another_protocol_loses_only_its_stream) {
  inbox box;
  auto listener = listen(box, std::make_shared<buffer_pool>());
  int fd = raw_connect_with_hello(listener->port());
  const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  BOOST_REQUIRE(::send(fd, junk, sizeof(junk), 0) > 0);
  BOOST_REQUIRE(box.wait([&] { return !box.errors.empty(); }));
  BOOST_TEST(contains(box.errors[0], "does not speak Stoker's batch protocol"),
             box.errors[0]);
  char byte;
  BOOST_TEST(::recv(fd, &byte, 1, 0) == 0); // the listener closed it
  ::close(fd);
  auto sender = batch_sender::connect("127.0.0.1", listener->port(), plain());
  BOOST_REQUIRE(sender);
  BOOST_REQUIRE(!sender->send(sample(7, 1, 16)));
  BOOST_REQUIRE(box.wait([&] { return box.batches.size() == 1; }));
}

BOOST_AUTO_TEST_CASE(a_frame_cut_short_is_reported_and_not_delivered) {
  inbox box;
  auto listener = listen(box, std::make_shared<buffer_pool>());
  auto batch = sample(41, 2, 32);
  std::vector<char> frame;
  encode_frame_head(batch, frame);
  frame.insert(frame.end(), batch.data.begin(),
               batch.data.begin() + batch.data.size() / 2);
  int fd = raw_connect_with_hello(listener->port());
  BOOST_REQUIRE(::send(fd, frame.data(), frame.size(), 0)
                == static_cast<ssize_t>(frame.size()));
  ::close(fd);
  BOOST_REQUIRE(box.wait([&] { return !box.errors.empty(); }));
  BOOST_TEST(contains(box.errors[0], "stream ended inside batch 41"),
             box.errors[0]);
  BOOST_TEST(box.batches.empty());
}

BOOST_AUTO_TEST_CASE(a_frame_over_the_limit_is_refused_before_allocating) {
  inbox box;
  auto batch = sample(3, 2, 32);
  auto listener = listen(box, std::make_shared<buffer_pool>(),
                         batch.data.size() - 1);
  auto sender = batch_sender::connect("127.0.0.1", listener->port(), plain());
  BOOST_REQUIRE(sender);
  (void) sender->send(batch); // may or may not fail: the peer closes
  BOOST_REQUIRE(box.wait([&] { return !box.errors.empty(); }));
  BOOST_TEST(contains(box.errors[0], "expected at most"), box.errors[0]);
  BOOST_TEST(box.batches.empty());
}

BOOST_AUTO_TEST_CASE(connecting_where_nobody_listens_names_the_address) {
  uint16_t port = 0;
  {
    inbox box;
    port = listen(box, std::make_shared<buffer_pool>())->port();
  } // closed again: nobody listens there now
  auto sender = batch_sender::connect("127.0.0.1", port, plain());
  BOOST_REQUIRE(!sender);
  BOOST_TEST(is(sender.error(), errc::io_failure));
  BOOST_TEST(contains(describe(sender.error()),
                      "127.0.0.1:" + std::to_string(port)),
             describe(sender.error()));
}

BOOST_AUTO_TEST_CASE(stopping_with_an_idle_peer_connected_does_not_hang) {
  inbox box;
  auto listener = listen(box, std::make_shared<buffer_pool>());
  int fd = raw_connect(listener->port());
  std::this_thread::sleep_for(50ms); // let the listener take the stream
  auto t0 = std::chrono::steady_clock::now();
  listener.reset();
  bool quick = std::chrono::steady_clock::now() - t0 < 2s;
  BOOST_TEST(quick);
  ::close(fd);
  BOOST_TEST(box.errors.empty());
}

BOOST_AUTO_TEST_CASE(frames_without_the_run_token_are_refused_and_counted) {
  inbox box;
  auto listener = listen(box, std::make_shared<buffer_pool>());
  // A stranger who knows the protocol but not the token: a whole, valid
  // frame after a hello with another token.
  auto batch = sample(5, 1, 16);
  std::vector<char> frame;
  encode_frame_head(batch, frame);
  frame.insert(frame.end(), batch.data.begin(), batch.data.end());
  int fd = raw_connect(listener->port());
  std::string hello = "STKB" + std::string(64, 'x');
  BOOST_REQUIRE(::send(fd, hello.data(), hello.size(), 0) > 0);
  (void) ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL);
  BOOST_REQUIRE(box.wait([&] { return !box.errors.empty(); }));
  BOOST_TEST(contains(box.errors[0], "lacks this run's stream token"),
             box.errors[0]);
  ::close(fd);
  // No hello at all: the frame itself is taken for a bad hello.
  fd = raw_connect(listener->port());
  (void) ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL);
  BOOST_REQUIRE(box.wait([&] { return box.errors.size() == 2; }));
  ::close(fd);
  BOOST_TEST(listener->refused() == 2u);
  BOOST_TEST(box.batches.empty());
  // The run's own workers go on.
  auto sender = batch_sender::connect("127.0.0.1", listener->port(), plain());
  BOOST_REQUIRE(sender);
  BOOST_REQUIRE(!sender->send(sample(6, 1, 16)));
  BOOST_REQUIRE(box.wait([&] { return box.batches.size() == 1; }));
}

BOOST_AUTO_TEST_CASE(a_silent_peer_is_dropped_after_the_handshake_timeout) {
  inbox box;
  auto listener = listen(box, std::make_shared<buffer_pool>());
  int fd = raw_connect(listener->port()); // says nothing
  BOOST_REQUIRE(box.wait([&] { return !box.errors.empty(); }));
  BOOST_TEST(contains(box.errors[0], "no hello within"), box.errors[0]);
  ::close(fd);
}

BOOST_AUTO_TEST_CASE(delivers_batches_over_mutual_tls) {
  auto& certs = test::dev_certs();
  inbox box;
  auto listener = listen(box, std::make_shared<buffer_pool>(), 64u << 20,
                         {token, test::tls_of(certs.cluster, "trainer-0"),
                          2s});
  auto sender = batch_sender::connect(
    "127.0.0.1", listener->port(),
    {token, test::tls_of(certs.cluster, "worker-a"), 2s});
  BOOST_REQUIRE_MESSAGE(sender, (sender ? "" : describe(sender.error())));
  std::vector<image_batch> sent{sample(1, 14, 224), sample(2, 3, 64)};
  for (auto& b : sent)
    BOOST_REQUIRE(!sender->send(b));
  BOOST_REQUIRE(box.wait([&] { return box.batches.size() == sent.size(); }));
  for (size_t i = 0; i < sent.size(); ++i)
    BOOST_TEST((box.batches[i].data == sent[i].data));
  BOOST_TEST(box.errors.empty());
}

BOOST_AUTO_TEST_CASE(a_tls_stream_needs_a_certificate_of_the_cluster_ca) {
  auto& certs = test::dev_certs();
  inbox box;
  auto listener = listen(box, std::make_shared<buffer_pool>(), 64u << 20,
                         {token, test::tls_of(certs.cluster, "trainer-0"),
                          2s});
  // Another CA: both ends say why.
  auto stranger = batch_sender::connect(
    "127.0.0.1", listener->port(),
    {token, test::tls_of(certs.other, "worker-x"), 2s});
  BOOST_REQUIRE(!stranger);
  BOOST_TEST(contains(describe(stranger.error()), "not valid for this "
                                                  "cluster's CA"),
             describe(stranger.error()));
  BOOST_REQUIRE(box.wait([&] { return !box.errors.empty(); }));
  BOOST_TEST(contains(box.errors[0], "refused"), box.errors[0]);
  // Plain TCP with the right token: not TLS.
  int fd = raw_connect_with_hello(listener->port());
  BOOST_REQUIRE(box.wait([&] { return box.errors.size() == 2; }));
  BOOST_TEST(contains(box.errors[1], "not TLS"), box.errors[1]);
  ::close(fd);
  BOOST_TEST(listener->refused() == 2u);
  BOOST_TEST(box.batches.empty());
}

BOOST_AUTO_TEST_CASE(sixty_four_concurrent_streams_arrive_intact_on_one_thread) {
  inbox box;
  auto pool = std::make_shared<buffer_pool>(16);
  auto listener = listen(box, pool);
  constexpr int senders = 64;
  constexpr int per_sender = 4;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < senders; ++t)
    threads.emplace_back([&, t] {
      auto sender = batch_sender::connect("127.0.0.1", listener->port(),
                                          plain());
      if (!sender) {
        ++failures;
        return;
      }
      for (int k = 0; k < per_sender; ++k)
        if (sender->send(sample(uint64_t(t) * 100 + k + 1, 3, 48)))
          ++failures;
    });
  for (auto& t : threads)
    t.join();
  BOOST_REQUIRE(failures == 0);
  BOOST_REQUIRE(box.wait(
    [&] { return box.batches.size() == size_t{senders * per_sender}; }));
  std::set<uint64_t> ids;
  for (auto& b : box.batches) {
    auto want = sample(b.batch_id, 3, 48);
    BOOST_TEST((b.data == want.data), "batch " << b.batch_id);
    BOOST_TEST(b.checksums == want.checksums);
    ids.insert(b.batch_id);
  }
  BOOST_TEST(ids.size() == size_t{senders * per_sender});
  BOOST_TEST(box.batch_threads.size() == 1u); // one event loop, not 64
  BOOST_TEST(box.errors.empty());
  BOOST_TEST(listener->frames() == uint64_t{senders * per_sender});
}

BOOST_AUTO_TEST_CASE(two_hundred_fifty_six_streams_stay_open_at_once) {
  inbox box;
  auto listener = listen(box, std::make_shared<buffer_pool>());
  std::vector<batch_sender> senders;
  for (int t = 0; t < 256; ++t) {
    auto s = batch_sender::connect("127.0.0.1", listener->port(), plain());
    BOOST_REQUIRE_MESSAGE(s, (s ? "" : describe(s.error())));
    senders.push_back(std::move(*s));
  }
  for (int t = 0; t < 256; ++t)
    BOOST_REQUIRE(!senders[size_t(t)].send(sample(uint64_t(t) + 1, 1, 16)));
  BOOST_REQUIRE(box.wait([&] { return box.batches.size() == 256u; }));
  BOOST_TEST(listener->open_streams() == 256u);
  senders.clear(); // each closes: a clean end, no error
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (listener->open_streams() > 0
         && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  BOOST_TEST(listener->open_streams() == 0u);
  BOOST_TEST(box.errors.empty());
}

BOOST_AUTO_TEST_SUITE_END()

