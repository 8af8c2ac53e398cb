#pragma once

#include <string_view>

namespace stoker {

/// The live dashboard (observe/dashboard.html, compiled in by
/// cmake/EmbedText.cmake): one self-contained HTML page that polls
/// /api/state and draws with canvas. Static storage; any thread.
std::string_view dashboard_page();

} // namespace stoker
