#include <boost/test/unit_test.hpp>

#include <chrono>
#include <condition_variable>
#include <cmath>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include <caf/logger.hpp>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "data/synthetic_mapper.hpp"
#include "train/collective.hpp"
#include "train/group_store.hpp"
#include "train/step_engine.hpp"

#include "support/tiny_vit.hpp"

using namespace stoker;

namespace {

// A tiny ViT (no dropout, no batch statistics: the mean loss over a batch
// is exactly the mean of its parts) trained by plain SGD with momentum.
trainer_spec tiny_spec() {
  trainer_spec spec;
  spec.lr = 0.05;
  spec.momentum = 0.9;
  spec.model = stoker_test::tiny_vit();
  return spec;
}

image_batch batch_of(std::vector<uint64_t> ids) {
  synthetic_spec data;
  data.height = data.width = 32;
  data.num_classes = 10;
  work_item item;
  item.sample_ids = std::move(ids);
  auto batch = map_synthetic(data, item);
  batch.order = layout::chw;
  return batch;
}

std::vector<uint64_t> ids_from(uint64_t first, uint64_t n) {
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < n; ++i)
    out.push_back(first + i);
  return out;
}

std::unique_ptr<step_engine> engine_with_seed(uint64_t seed) {
  torch::manual_seed(seed);
  trainer_local_spec local;
  local.device = device_kind::cpu;
  auto engine = make_torch_engine(tiny_spec(), local, builtin_registry());
  BOOST_REQUIRE(engine);
  return std::move(*engine);
}

// The loss of the model on a fixed probe batch: a function of its
// parameters only (equal parameters, equal loss; after a few steps any
// difference shows).
double probe_loss(step_engine& engine) {
  auto probe = batch_of(ids_from(1000, 16));
  auto res = engine.evaluate(probe);
  BOOST_REQUIRE(res);
  return res->loss_sum;
}

struct group_outcome {
  std::vector<double> probe;                    // per rank
  std::vector<std::vector<double>> step_losses; // per rank, per step
  std::vector<uint64_t> collective_ns;          // per rank, summed
};

// Trains `steps[k][r]` (the ids rank r trains on in step k) on a group of
// steps[0].size() ranks, each in its own thread, each engine from its own
// seed (rank 0's model reaches every rank when it joins).
group_outcome train_group(const std::vector<std::vector<std::vector<uint64_t>>>&
                            steps) {
  auto world = static_cast<uint32_t>(steps.front().size());
  // The ranks meet as in a run: at a store actor, over CAF.
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto store = spawn_group_store(sys);
  std::vector<std::unique_ptr<step_engine>> engines;
  for (uint32_t r = 0; r < world; ++r)
    engines.push_back(engine_with_seed(100 + r));
  group_outcome out;
  out.probe.resize(world);
  out.step_losses.resize(world);
  out.collective_ns.resize(world);
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      collective_options o;
      o.rank = r;
      o.world = world;
      o.store = make_actor_store(sys, store, std::chrono::seconds(30));
      o.timeout = std::chrono::seconds(30);
      auto group = collective_group::join(o);
      if (!group) {
        errors[r] = describe(group.error());
        return;
      }
      std::shared_ptr<collective_group> shared = std::move(*group);
      if (auto err = engines[r]->join_group(shared)) {
        errors[r] = describe(err);
        return;
      }
      for (auto& step : steps) {
        auto batch = batch_of(step[r]);
        auto res = engines[r]->step(batch);
        if (!res) {
          errors[r] = describe(res.error());
          return;
        }
        out.step_losses[r].push_back(res->loss);
        out.collective_ns[r] += res->collective_ns;
      }
    });
  for (auto& t : threads)
    t.join();
  for (auto& e : errors)
    BOOST_REQUIRE_MESSAGE(e.empty(), e);
  for (uint32_t r = 0; r < world; ++r)
    out.probe[r] = probe_loss(*engines[r]);
  caf::anon_send_exit(store, caf::exit_reason::user_shutdown);
  return out;
}

// The same steps on one trainer with each step's ranks' samples together.
std::pair<double, std::vector<double>>
train_alone(const std::vector<std::vector<std::vector<uint64_t>>>& steps) {
  auto engine = engine_with_seed(100); // rank 0's model
  std::vector<double> losses;
  for (auto& step : steps) {
    std::vector<uint64_t> all;
    for (auto& part : step)
      all.insert(all.end(), part.begin(), part.end());
    auto batch = batch_of(all);
    auto res = engine->step(batch);
    BOOST_REQUIRE(res);
    losses.push_back(res->loss);
  }
  return {probe_loss(*engine), losses};
}

bool close(double a, double b, double rel = 1e-5) {
  return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

} // namespace

BOOST_AUTO_TEST_SUITE(collective)

BOOST_AUTO_TEST_CASE(two_ranks_of_batch_b_train_as_one_rank_of_batch_2b) {
  // Three SGD steps: ranks 0 and 1 take 8 samples each, the lone trainer
  // the same 16 at once.
  std::vector<std::vector<std::vector<uint64_t>>> steps;
  for (uint64_t k = 0; k < 3; ++k)
    steps.push_back({ids_from(16 * k, 8), ids_from(16 * k + 8, 8)});
  auto group = train_group(steps);
  auto [alone, alone_losses] = train_alone(steps);
  for (double probe : group.probe)
    BOOST_TEST(close(probe, alone), probe << " vs " << alone);
  for (size_t k = 0; k < steps.size(); ++k)
    for (auto& losses : group.step_losses)
      BOOST_TEST(close(losses[k], alone_losses[k]),
                 "step " << k << ": " << losses[k] << " vs "
                         << alone_losses[k]);
  // The models moved: the check above would pass for nothing otherwise.
  auto untrained = engine_with_seed(100);
  BOOST_TEST(!close(probe_loss(*untrained), alone, 1e-3));
}

BOOST_AUTO_TEST_CASE(partial_tails_of_unequal_size_weigh_by_their_samples) {
  // A full step, then a partial last step of 5 samples split 3 + 2 (as
  // pipeline.last-batch = partial splits it), then one where rank 1 has
  // none at all: it still takes part, with no weight.
  std::vector<std::vector<std::vector<uint64_t>>> steps{
    {ids_from(0, 8), ids_from(8, 8)},
    {ids_from(16, 3), ids_from(19, 2)},
    {ids_from(21, 1), {}}};
  auto group = train_group(steps);
  auto [alone, alone_losses] = train_alone(steps);
  for (double probe : group.probe)
    BOOST_TEST(close(probe, alone), probe << " vs " << alone);
  BOOST_TEST(close(group.step_losses[1][2], alone_losses[2]));
}

BOOST_AUTO_TEST_CASE(a_rank_that_never_comes_fails_the_join_within_the_timeout) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto store = spawn_group_store(sys);
  collective_options o;
  o.rank = 0;
  o.world = 2;
  o.store = make_actor_store(sys, store, std::chrono::seconds(2));
  o.timeout = std::chrono::seconds(2);
  auto t0 = std::chrono::steady_clock::now();
  auto group = collective_group::join(o);
  auto took = std::chrono::steady_clock::now() - t0;
  BOOST_REQUIRE(!group);
  BOOST_TEST(describe(group.error()).find("rank 0 of 2") != std::string::npos,
             describe(group.error()));
  BOOST_TEST((took < std::chrono::seconds(20)));
  caf::anon_send_exit(store, caf::exit_reason::user_shutdown);
}

// The store's keys keep c10d's semantics (those of TCPStore and
// HashStore): gloo's rendezvous relies on get waiting for a key, add
// counting, compare_set only over the expected value.
BOOST_AUTO_TEST_CASE(the_key_value_book_keeps_c10d_store_semantics) {
  key_value_book book;
  auto op = [](store_verb verb, std::string key, std::string value = {},
               std::string expected = {}) {
    store_op o;
    o.verb = verb;
    o.key = std::move(key);
    o.value.assign(value.begin(), value.end());
    o.expected.assign(expected.begin(), expected.end());
    return o;
  };
  auto text = [](const std::vector<uint8_t>& v) {
    return std::string(v.begin(), v.end());
  };
  BOOST_TEST(!book.apply(op(store_verb::get, "a")).has_value()); // waits
  auto wait = op(store_verb::wait, "");
  wait.keys = {"a", "b"};
  BOOST_TEST(!book.apply(wait).has_value());
  BOOST_TEST(book.apply(op(store_verb::set, "a", "1")).has_value());
  BOOST_TEST(text(book.apply(op(store_verb::get, "a"))->value) == "1");
  BOOST_TEST(!book.apply(wait).has_value()); // "b" still missing
  auto add = op(store_verb::add, "b");
  add.amount = 5;
  BOOST_TEST(book.apply(add)->number == 5);
  add.amount = -2;
  BOOST_TEST(book.apply(add)->number == 3);
  BOOST_TEST(text(book.apply(op(store_verb::get, "b"))->value) == "3");
  BOOST_TEST(book.apply(wait)->yes);
  // compare_set: over the expected value only; a missing key with an
  // empty expectation is set; otherwise the value held comes back.
  BOOST_TEST(text(book.apply(op(store_verb::compare_set, "a", "2", "9"))
                    ->value)
             == "1");
  BOOST_TEST(text(book.apply(op(store_verb::compare_set, "a", "2", "1"))
                    ->value)
             == "2");
  BOOST_TEST(text(book.apply(op(store_verb::compare_set, "c", "x", ""))
                    ->value)
             == "x");
  BOOST_TEST(text(book.apply(op(store_verb::compare_set, "d", "x", "y"))
                    ->value)
             == "y");
  BOOST_TEST(book.apply(op(store_verb::count, ""))->number == 3);
  BOOST_TEST(book.apply(op(store_verb::erase, "c"))->yes);
  BOOST_TEST(!book.apply(op(store_verb::erase, "c"))->yes);
  auto check = op(store_verb::check, "");
  check.keys = {"a", "c"};
  BOOST_TEST(!book.apply(check)->yes);
}

// Through the actor: a get waits for another thread's set; a wait for a
// key nobody sets fails within its timeout, naming the key.
BOOST_AUTO_TEST_CASE(the_actor_store_answers_across_threads_and_times_out) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto actor = spawn_group_store(sys);
  auto a = make_actor_store(sys, actor, std::chrono::seconds(5));
  auto b = make_actor_store(sys, actor, std::chrono::seconds(5));
  std::thread setter{[&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    b->set("k", {7, 8});
  }};
  BOOST_TEST((a->get("k") == std::vector<uint8_t>{7, 8}));
  setter.join();
  BOOST_TEST(a->add("n", 2) == 2);
  BOOST_TEST(b->add("n", 3) == 5);
  auto t0 = std::chrono::steady_clock::now();
  try {
    a->wait({"never"}, std::chrono::milliseconds(300));
    BOOST_FAIL("a wait for a key nobody sets returned");
  } catch (const std::exception& e) {
    BOOST_TEST(std::string{e.what()}.find("'never'") != std::string::npos,
               e.what());
  }
  BOOST_TEST((std::chrono::steady_clock::now() - t0
              < std::chrono::seconds(3)));
  caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(a_store_call_leaves_a_foreign_thread_free_of_the_actor_system) {
  // An actor system waits in its destructor for every thread holding its
  // logger: a thread of torch's (or Python's main thread) that asked the
  // store once must not hold it. The system's end is timed to prove it.
  auto t0 = std::chrono::steady_clock::now();
  bool clean = false;
  std::string after_close;
  std::thread foreign;
  std::mutex m;
  std::condition_variable cv;
  bool leave = false;
  {
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    auto actor = spawn_group_store(sys);
    auto store = make_actor_store(sys, actor, std::chrono::seconds(5));
    bool asked = false;
    foreign = std::thread{[&] {
      store->set("k", {1});
      std::unique_lock<std::mutex> guard{m};
      clean = caf::logger::current_logger() == nullptr;
      asked = true;
      cv.notify_all();
      // Alive past the system (if it waited for this thread, the wait ends
      // here after 10 s, and the time check below fails).
      cv.wait_for(guard, std::chrono::seconds(10), [&] { return leave; });
    }};
    {
      std::unique_lock<std::mutex> guard{m};
      cv.wait(guard, [&] { return asked; });
    }
    close_actor_store(*store);
    try {
      store->get("k");
    } catch (const std::exception& e) {
      after_close = e.what();
    }
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  } // the system ends here, while the foreign thread still lives
  BOOST_TEST((std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)));
  {
    std::lock_guard<std::mutex> guard{m};
    leave = true;
  }
  cv.notify_all();
  foreign.join();
  BOOST_TEST(clean);
  BOOST_TEST(after_close.find("the Stoker run that made it has ended")
               != std::string::npos,
             after_close);
}

BOOST_AUTO_TEST_CASE(nccl_without_nccl_in_the_build_is_refused_by_name) {
  auto err = check_backend(collective_backend::nccl);
  BOOST_TEST(describe(err).find("trainer.backend = \"nccl\"")
             != std::string::npos);
  BOOST_TEST(!check_backend(collective_backend::gloo));
}

BOOST_AUTO_TEST_SUITE_END()
