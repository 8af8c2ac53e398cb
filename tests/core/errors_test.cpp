#include <boost/test/unit_test.hpp>

#include <caf/exit_reason.hpp>
#include <caf/pec.hpp>
#include <caf/sec.hpp>

#include "stoker/errors.hpp"

using namespace stoker;

namespace {

// What no message may show a user: CAF's renderings of its errors.
bool shows_internals(const std::string& text) {
  for (auto part : {"exit_reason", "sec::", "parser_error", "error(",
                    "system_error", "pec::"})
    if (text.find(part) != std::string::npos)
      return true;
  return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(errors)

BOOST_AUTO_TEST_CASE(stokers_own_errors_read_as_their_message) {
  auto err = make_error(errc::invalid_config, "router.window = 0: expected 1..");
  BOOST_TEST(describe(err) == "router.window = 0: expected 1..");
}

BOOST_AUTO_TEST_CASE(cafs_errors_read_in_words_without_internals) {
  BOOST_TEST(describe(caf::make_error(caf::exit_reason::remote_link_unreachable))
             == "its connection dropped");
  BOOST_TEST(describe(caf::make_error(caf::exit_reason::user_shutdown))
             == "it was shut down");
  for (int code = 0; code <= 7; ++code) {
    auto text = describe(
      caf::make_error(static_cast<caf::exit_reason>(code)));
    BOOST_TEST(!shows_internals(text), text);
  }
  for (int code = 1; code <= 60; ++code) {
    auto text = describe(caf::make_error(static_cast<caf::sec>(code)));
    BOOST_TEST(!shows_internals(text), text);
    BOOST_TEST(!text.empty());
  }
  BOOST_TEST(describe(caf::make_error(caf::sec::request_timeout))
             == "no answer within the deadline");
  auto parse = describe(caf::make_error(caf::pec::unexpected_character));
  BOOST_TEST(!shows_internals(parse), parse);
}

BOOST_AUTO_TEST_SUITE_END()
