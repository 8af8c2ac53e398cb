# Writes the text of IN as a C++ function NAME() returning a string_view,
# into OUT (a generated source): the dashboard page is edited as HTML and
# compiled into the library, so nothing is read from disk at run time.
#   cmake -DIN=page.html -DOUT=page.cpp -DNAME=dashboard_page -DHEADER=observe/dashboard_page.hpp -P EmbedText.cmake
file(READ "${IN}" content)
string(FIND "${content}" ")stoker_text\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw string delimiter )stoker_text\"")
endif()
file(WRITE "${OUT}.tmp"
  "// Generated from ${IN} by cmake/EmbedText.cmake; do not edit.\n"
  "#include \"${HEADER}\"\n\nnamespace stoker {\n\n"
  "std::string_view ${NAME}() {\n"
  "  static constexpr char text[] = R\"stoker_text(${content})stoker_text\";\n"
  "  return {text, sizeof(text) - 1};\n}\n\n} // namespace stoker\n")
file(RENAME "${OUT}.tmp" "${OUT}")
