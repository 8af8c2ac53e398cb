#include "stoker/options.hpp"

#include <algorithm>
#include <cmath>

#include "stoker/errors.hpp"

namespace stoker {

double learning_rate_at(const trainer_spec& spec, uint64_t step) {
  if (spec.schedule != lr_schedule::cosine || spec.total_steps == 0)
    return spec.lr;
  double done = static_cast<double>(std::min(step, spec.total_steps))
                / static_cast<double>(spec.total_steps);
  return spec.lr * 0.5 * (1.0 + std::cos(3.14159265358979323846 * done));
}

std::optional<std::pair<std::string, uint16_t>>
parse_host_port(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size())
    return std::nullopt;
  uint32_t port = 0;
  for (char ch : text.substr(colon + 1)) {
    if (ch < '0' || ch > '9')
      return std::nullopt;
    port = port * 10 + static_cast<uint32_t>(ch - '0');
    if (port > 65535)
      return std::nullopt;
  }
  if (port == 0)
    return std::nullopt;
  return std::make_pair(std::string{text.substr(0, colon)},
                        static_cast<uint16_t>(port));
}

caf::expected<node_spec> parse_node_spec(std::string_view entry) {
  auto bad = [&] {
    return make_error(errc::invalid_config,
                      "\"" + std::string{entry}
                        + "\": expected NAME:worker[:WORKERS] or "
                          "NAME:trainer");
  };
  node_spec node;
  auto first = entry.find(':');
  if (first == std::string_view::npos || first == 0)
    return bad();
  node.name = std::string{entry.substr(0, first)};
  auto rest = entry.substr(first + 1);
  auto second = rest.find(':');
  auto role = parse_enum<role_kind>(rest.substr(0, second));
  if (!role || (*role != role_kind::worker && *role != role_kind::trainer))
    return bad();
  node.role = *role;
  if (second != std::string_view::npos) {
    auto count = rest.substr(second + 1);
    if (node.role != role_kind::worker || count.empty() || count.size() > 4)
      return bad();
    for (char ch : count) {
      if (ch < '0' || ch > '9')
        return bad();
      node.workers = node.workers * 10 + static_cast<uint32_t>(ch - '0');
    }
  }
  return node;
}

bool is_loopback(std::string_view address) {
  return address == "localhost" || address == "::1"
         || address.rfind("127.", 0) == 0;
}

uint64_t batch_wire_bytes(const pipeline_options& p) {
  auto& s = p.data.output;
  return uint64_t{p.source.batch_size} * s.height * s.width * s.channels
         * dtype_size(p.transport.wire);
}

uint64_t batch_float_bytes(const pipeline_options& p) {
  auto& s = p.data.output;
  return uint64_t{p.source.batch_size} * s.height * s.width * s.channels
         * sizeof(float);
}

} // namespace stoker
