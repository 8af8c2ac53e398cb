#include "stoker/errors.hpp"

#include <caf/atom.hpp>
#include <caf/exit_reason.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/sec.hpp>

namespace stoker {

caf::error make_error(errc code, std::string message) {
  return caf::error{static_cast<uint8_t>(code), error_category,
                    caf::make_message(std::move(message))};
}

namespace {

// Why an actor ended, as a user reads it (CAF's exit_reason).
std::string exit_words(caf::exit_reason reason) {
  using caf::exit_reason;
  switch (reason) {
    case exit_reason::normal:
      return "it ended normally";
    case exit_reason::unhandled_exception:
      return "it threw an exception nobody caught";
    case exit_reason::unknown:
      return "it was already gone";
    case exit_reason::out_of_workers:
      return "its pool ran out of workers";
    case exit_reason::user_shutdown:
      return "it was shut down";
    case exit_reason::kill:
      return "it was killed";
    case exit_reason::remote_link_unreachable:
      return "its connection dropped";
    case exit_reason::unreachable:
      return "it could no longer be reached";
  }
  return "it ended (reason " + std::to_string(static_cast<int>(reason)) + ")";
}

// CAF's system errors a user can meet, in words; the rest by number.
std::string system_words(caf::sec code) {
  using caf::sec;
  switch (code) {
    case sec::unexpected_message:
      return "a message of a kind the receiver does not take";
    case sec::unexpected_response:
      return "an answer of a kind the asker did not expect";
    case sec::request_receiver_down:
      return "the actor asked is gone";
    case sec::request_timeout:
      return "no answer within the deadline";
    case sec::no_actor_published_at_port:
      return "nothing of Stoker's listens at that port";
    case sec::disconnect_during_handshake:
      return "the peer hung up while connecting (another release, or not "
             "a Stoker node)";
    case sec::no_route_to_receiving_node:
      return "no connection to that node";
    case sec::cannot_connect_to_node:
      return "cannot connect to the node";
    case sec::cannot_open_port:
      return "cannot listen on that port (taken, or not allowed)";
    case sec::network_syscall_failed:
      return "a network call failed";
    case sec::invalid_argument:
      return "an invalid argument";
    case sec::runtime_error:
      return "a runtime error";
    case sec::cannot_open_file:
      return "cannot open the file";
    case sec::socket_invalid:
    case sec::socket_disconnected:
      return "the connection is closed";
    case sec::socket_operation_failed:
      return "a socket operation failed";
    case sec::incompatible_versions:
    case sec::incompatible_application_ids:
      return "the peer runs another Stoker release";
    case sec::malformed_basp_message:
      return "the peer sent a malformed message";
    case sec::remote_lookup_failed:
      return "the peer does not know the actor asked for";
    case sec::connection_timeout:
      return "the connection timed out";
    default:
      return "an actor-system error (number "
             + std::to_string(static_cast<int>(code)) + ")";
  }
}

} // namespace

std::string describe(const caf::error& err) {
  if (!err)
    return "no error";
  if (err.category() == error_category && err.context().size() == 1
      && err.context().match_element<std::string>(0))
    return err.context().get_as<std::string>(0);
  // CAF's own errors in words: a user never reads exit_reason(...),
  // sec::... or parser_error(...).
  auto detail = std::string{};
  if (err.context().size() >= 1 && err.context().match_element<std::string>(0))
    detail = " (" + err.context().get_as<std::string>(0) + ")";
  if (err.category() == caf::atom("exit"))
    return exit_words(static_cast<caf::exit_reason>(err.code()));
  if (err.category() == caf::atom("system"))
    return system_words(static_cast<caf::sec>(err.code())) + detail;
  if (err.category() == caf::atom("parser"))
    return "a value that cannot be read" + detail;
  if (err.category() == error_category)
    return "an error (number " + std::to_string(err.code()) + ")";
  return "an error of another library (number " + std::to_string(err.code())
         + ")" + detail;
}

bool is(const caf::error& err, errc code) noexcept {
  return err.category() == error_category
         && err.code() == static_cast<uint8_t>(code);
}

} // namespace stoker
