#include "stoker/errors.hpp"

#include <caf/make_message.hpp>
#include <caf/message.hpp>

namespace stoker {

caf::error make_error(errc code, std::string message) {
  return caf::error{static_cast<uint8_t>(code), error_category,
                    caf::make_message(std::move(message))};
}

std::string describe(const caf::error& err) {
  if (!err)
    return "no error";
  if (err.category() == error_category && err.context().size() == 1
      && err.context().match_element<std::string>(0))
    return err.context().get_as<std::string>(0);
  return to_string(err);
}

bool is(const caf::error& err, errc code) noexcept {
  return err.category() == error_category
         && err.code() == static_cast<uint8_t>(code);
}

} // namespace stoker
