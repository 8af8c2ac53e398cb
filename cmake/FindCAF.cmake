# FindCAF
# -------
# Finds the C++ Actor Framework (CAF 0.17). Debian's libcaf-dev ships headers
# and shared libraries but no CMake package, so we locate them ourselves.
#
# Components: core (always), io, openssl.
# Imported targets: CAF::core, CAF::io, CAF::openssl
# Result variables: CAF_FOUND, CAF_VERSION, CAF_INCLUDE_DIR

find_path(CAF_INCLUDE_DIR NAMES caf/config.hpp)

if(CAF_INCLUDE_DIR AND EXISTS "${CAF_INCLUDE_DIR}/caf/config.hpp")
  # CAF encodes its version as MAJOR*10000 + MINOR*100 + PATCH.
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" caf_version_line
       REGEX "^#define CAF_VERSION [0-9]+")
  string(REGEX REPLACE "^#define CAF_VERSION ([0-9]+).*" "\\1" caf_version_num
         "${caf_version_line}")
  if(caf_version_num)
    math(EXPR caf_major "${caf_version_num} / 10000")
    math(EXPR caf_minor "(${caf_version_num} / 100) % 100")
    math(EXPR caf_patch "${caf_version_num} % 100")
    set(CAF_VERSION "${caf_major}.${caf_minor}.${caf_patch}")
  endif()
endif()

set(caf_components core ${CAF_FIND_COMPONENTS})
list(REMOVE_DUPLICATES caf_components)
set(caf_required_vars CAF_INCLUDE_DIR)
foreach(comp IN LISTS caf_components)
  find_library(CAF_${comp}_LIBRARY NAMES caf_${comp})
  if(CAF_${comp}_LIBRARY)
    set(CAF_${comp}_FOUND TRUE)
  endif()
  if(CAF_FIND_REQUIRED_${comp} OR comp STREQUAL "core")
    list(APPEND caf_required_vars CAF_${comp}_LIBRARY)
  endif()
endforeach()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CAF
  REQUIRED_VARS ${caf_required_vars}
  VERSION_VAR CAF_VERSION
  HANDLE_COMPONENTS)

if(CAF_FOUND)
  find_package(Threads REQUIRED)
  foreach(comp IN LISTS caf_components)
    if(CAF_${comp}_FOUND AND NOT TARGET CAF::${comp})
      add_library(CAF::${comp} SHARED IMPORTED)
      set_target_properties(CAF::${comp} PROPERTIES
        IMPORTED_LOCATION "${CAF_${comp}_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES Threads::Threads)
      if(NOT comp STREQUAL "core")
        set_property(TARGET CAF::${comp} APPEND PROPERTY
          INTERFACE_LINK_LIBRARIES CAF::core)
      endif()
    endif()
  endforeach()
endif()

mark_as_advanced(CAF_INCLUDE_DIR)
