# Installation: headers, static libraries and a relocatable CMake package, so that
#
#   find_package(braid REQUIRED)
#   target_link_libraries(app PRIVATE braid::braid)
#
# works against `cmake --install <build> --prefix P`. The tools install themselves (braid_tool).
# Included last by the top-level CMakeLists.txt, when BRAID_EXPORTED_TARGETS (every
# braid_library plus the umbrella target) is complete.

include(CMakePackageConfigHelpers)
set(BRAID_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/braid)

# Public headers sit beside their sources and keep that layout under P/include/braid/.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/braid/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/braid
  FILES_MATCHING PATTERN "*.h"
  PATTERN "tools" EXCLUDE)

get_property(_braid_export_targets GLOBAL PROPERTY BRAID_EXPORTED_TARGETS)
install(TARGETS ${_braid_export_targets}
  EXPORT braidTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT braidTargets NAMESPACE braid:: DESTINATION ${BRAID_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/braidConfig.cmake.in
  ${PROJECT_BINARY_DIR}/braidConfig.cmake
  INSTALL_DESTINATION ${BRAID_INSTALL_CMAKEDIR})
# 0.x: a minor release may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/braidConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/braidConfig.cmake
  ${PROJECT_BINARY_DIR}/braidConfigVersion.cmake
  DESTINATION ${BRAID_INSTALL_CMAKEDIR})
