#include "train/group_store.hpp"

#include <algorithm>
#include <shared_mutex>
#include <stdexcept>

#include <caf/logger.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "stoker/errors.hpp"

namespace stoker {

// -- key_value_book -----------------------------------------------------------

bool key_value_book::has_all(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(),
                     [&](auto& k) { return values_.count(k) > 0; });
}

bool key_value_book::changes(const store_op& op) noexcept {
  switch (op.verb) {
    case store_verb::set:
    case store_verb::compare_set:
    case store_verb::add:
    case store_verb::erase:
      return true;
    default:
      return false;
  }
}

std::optional<store_reply> key_value_book::apply(const store_op& op) {
  store_reply out;
  switch (op.verb) {
    case store_verb::set:
      values_[op.key] = op.value;
      return out;
    case store_verb::compare_set: {
      auto i = values_.find(op.key);
      if (i == values_.end()) {
        if (!op.expected.empty()) {
          out.value = op.expected; // as TCPStore: nothing to compare with
          return out;
        }
        values_[op.key] = op.value;
        out.value = op.value;
      } else if (i->second == op.expected) {
        i->second = op.value;
        out.value = op.value;
      } else {
        out.value = i->second;
      }
      return out;
    }
    case store_verb::get: {
      auto i = values_.find(op.key);
      if (i == values_.end())
        return std::nullopt;
      out.value = i->second;
      return out;
    }
    case store_verb::add: {
      auto& v = values_[op.key];
      int64_t now = 0;
      if (!v.empty())
        now = std::stoll(std::string(v.begin(), v.end()));
      now += op.amount;
      auto text = std::to_string(now);
      v.assign(text.begin(), text.end());
      out.number = now;
      return out;
    }
    case store_verb::erase:
      out.yes = values_.erase(op.key) > 0;
      return out;
    case store_verb::check:
      out.yes = has_all(op.keys);
      return out;
    case store_verb::count:
      out.number = static_cast<int64_t>(values_.size());
      return out;
    case store_verb::wait:
      if (!has_all(op.keys))
        return std::nullopt;
      out.yes = true;
      return out;
  }
  return out;
}

// -- the store actor ----------------------------------------------------------

namespace {

using clock_type = std::chrono::steady_clock;

std::string named_keys(const store_op& op) {
  if (op.verb == store_verb::get)
    return "key '" + op.key + "'";
  std::string out = "key(s)";
  for (auto& k : op.keys)
    out += " '" + k + "'";
  return out;
}

struct store_state {
  struct waiter {
    store_op op;
    caf::typed_response_promise<store_reply> promise;
    clock_type::time_point deadline;
  };
  key_value_book book;
  std::deque<waiter> waiting;
  static constexpr const char* name = "stoker.group_store";
};

using store_ptr = store_actor::stateful_pointer<store_state>;

// Answers every waiter whose keys came, and errors those past their
// deadline (their callers have given up by then).
void answer_waiters(store_ptr self) {
  auto& st = self->state;
  auto now = clock_type::now();
  for (auto i = st.waiting.begin(); i != st.waiting.end();) {
    if (auto reply = st.book.apply(i->op)) {
      i->promise.deliver(std::move(*reply));
    } else if (now >= i->deadline) {
      i->promise.deliver(make_error(
        errc::trainer_failure,
        "the group's store: no " + named_keys(i->op) + " within "
          + std::to_string(i->op.timeout_ms)
          + " ms (a rank did not come: trainer.collective-timeout)"));
    } else {
      ++i;
      continue;
    }
    i = st.waiting.erase(i);
  }
}

store_actor::behavior_type store_fn(store_ptr self) {
  return {
    [=](store_op& op) -> caf::result<store_reply> {
      auto& st = self->state;
      auto reply = st.book.apply(op);
      if (key_value_book::changes(op) || !st.waiting.empty())
        answer_waiters(self);
      if (reply)
        return std::move(*reply);
      auto timeout = std::chrono::milliseconds(op.timeout_ms);
      auto promise = self->template make_response_promise<store_reply>();
      st.waiting.push_back(
        store_state::waiter{std::move(op), promise, clock_type::now() + timeout});
      // Looks again once this one's deadline has passed.
      self->delayed_send(self, timeout, tick_atom::value);
      return promise;
    },
    [=](tick_atom) { answer_waiters(self); },
  };
}

// -- the client ---------------------------------------------------------------

class actor_store : public c10d::Store {
public:
  actor_store(caf::actor_system& sys, store_actor store,
              std::chrono::milliseconds timeout)
    : c10d::Store(timeout), sys_(&sys), store_(std::move(store)) {
    // nop
  }

  // close_actor_store: waits for the calls in flight (each bounded by its
  // timeout), then drops the actor system and the store's handle.
  void close() {
    std::unique_lock<std::shared_mutex> guard{mutex_};
    sys_ = nullptr;
    store_ = nullptr;
  }

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    store_op op;
    op.verb = store_verb::set;
    op.key = key;
    op.value = value;
    ask(std::move(op), timeout_);
  }

  std::vector<uint8_t> compareSet(const std::string& key,
                                  const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override {
    store_op op;
    op.verb = store_verb::compare_set;
    op.key = key;
    op.expected = expected;
    op.value = desired;
    return ask(std::move(op), timeout_).value;
  }

  std::vector<uint8_t> get(const std::string& key) override {
    store_op op;
    op.verb = store_verb::get;
    op.key = key;
    return ask(std::move(op), timeout_).value;
  }

  int64_t add(const std::string& key, int64_t value) override {
    store_op op;
    op.verb = store_verb::add;
    op.key = key;
    op.amount = value;
    return ask(std::move(op), timeout_).number;
  }

  bool deleteKey(const std::string& key) override {
    store_op op;
    op.verb = store_verb::erase;
    op.key = key;
    return ask(std::move(op), timeout_).yes;
  }

  bool check(const std::vector<std::string>& keys) override {
    store_op op;
    op.verb = store_verb::check;
    op.keys = keys;
    return ask(std::move(op), timeout_).yes;
  }

  int64_t getNumKeys() override {
    store_op op;
    op.verb = store_verb::count;
    return ask(std::move(op), timeout_).number;
  }

  void wait(const std::vector<std::string>& keys) override {
    wait(keys, timeout_);
  }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    store_op op;
    op.verb = store_verb::wait;
    op.keys = keys;
    ask(std::move(op), timeout);
  }

private:
  // One request from this thread; a waiting op gets its own timeout, and
  // the request a second more (the store answers a timeout itself).
  store_reply ask(store_op op, std::chrono::milliseconds timeout) {
    op.timeout_ms = static_cast<uint64_t>(timeout.count());
    auto what = named_keys(op);
    std::shared_lock<std::shared_mutex> guard{mutex_};
    if (sys_ == nullptr)
      throw std::runtime_error("the group's store is closed: the Stoker run "
                               "that made it has ended (" + what + ")");
    // A scoped actor leaves the calling thread holding the actor system's
    // logger (thread-local); the system's destructor waits for that
    // logger's end, so a thread of someone else's (torch's, Python's main
    // thread) that asked once would hold the shutdown until it exits.
    const bool foreign_thread = caf::logger::current_logger() == nullptr;
    struct forget_logger {
      bool active;
      ~forget_logger() {
        if (active)
          caf::logger::set_current_actor_system(nullptr);
      }
    } forget{foreign_thread};
    caf::scoped_actor self{*sys_};
    store_reply out;
    std::string failure;
    self->request(store_, timeout + std::chrono::seconds(1), std::move(op))
      .receive([&](store_reply& r) { out = std::move(r); },
               [&](caf::error& err) {
                 failure = err == caf::sec::request_timeout
                             ? "the group's store did not answer within "
                                 + std::to_string(timeout.count())
                                 + " ms (" + what + ")"
                             : describe(err);
               });
    if (!failure.empty())
      throw std::runtime_error(failure);
    return out;
  }

  std::shared_mutex mutex_; // calls share it; close() takes it alone
  caf::actor_system* sys_;
  store_actor store_;
};

} // namespace

store_actor spawn_group_store(caf::actor_system& sys) {
  return sys.spawn(store_fn);
}

c10::intrusive_ptr<c10d::Store>
make_actor_store(caf::actor_system& sys, store_actor store,
                 std::chrono::milliseconds timeout) {
  return c10::make_intrusive<actor_store>(sys, std::move(store), timeout);
}

void close_actor_store(c10d::Store& store) {
  if (auto* mine = dynamic_cast<actor_store*>(&store))
    mine->close();
}

} // namespace stoker
