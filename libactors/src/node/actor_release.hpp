#pragma once

// The end of a node's actors before its actor system's. CAF 0.17.6's
// actor_system destructor waits for the thread of every detached actor
// (trainers, workers), and that thread waits until its actor is destroyed,
// not only stopped: until the last strong reference anywhere has gone. An
// actor leaves the system's count of running actors before it sends its
// down messages, so the destructor may already be stopping the middleman
// when a trainer's down message to its remote monitor (the head's router)
// reaches the BASP broker; a broker stopped that way never drains its
// mailbox (abstract_broker::cleanup skips it), the message holds the
// trainer for good, and the destructor waited forever: a Python rank's
// close() for its whole bounded join (20-30 s), stoker-node until its
// bound_shutdown. Seen under a hardware watchpoint on the trainer's count.
// While the middleman runs, the broker ships or drops such a message
// within milliseconds: a node lets go of its actors and waits for that.

#include <chrono>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

namespace stoker {

/// Takes the caller's last references to `actors` (each stopped already, or
/// told to stop), withdraws any of them published through CAF (the BASP
/// broker holds a published actor until then), and waits up to `limit`
/// until every one is destroyed. Returns how many are still referenced
/// somewhere after `limit` (0: the actor system's shutdown waits for none
/// of them). Blocks the calling thread (a role's main thread, which must
/// not be one of CAF's).
size_t release_actors(caf::actor_system& sys, std::vector<caf::actor> actors,
                      std::chrono::milliseconds limit);

} // namespace stoker
