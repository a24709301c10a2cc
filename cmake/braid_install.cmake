# Installation: the public headers, static libraries and a relocatable CMake package, so that
#
#   find_package(braid REQUIRED)                    # or: find_package(braid REQUIRED COMPONENTS torch)
#   target_link_libraries(app PRIVATE braid::braid) #     target_link_libraries(app PRIVATE braid::torch)
#
# works against `cmake --install <build> --prefix P`. The tools install themselves (braid_tool).
# Included last by the top-level CMakeLists.txt, when BRAID_EXPORTED_TARGETS (every
# braid_library plus the umbrella target) and the components' target lists are complete.

include(CMakePackageConfigHelpers)
set(BRAID_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/braid)

# Only the headers each braid_library names as PUBLIC_HEADERS (its HEADERS file set) are
# installed, under P/include/braid/<layer>/ as in src/; the layers' other headers are internal.
get_property(_braid_export_targets GLOBAL PROPERTY BRAID_EXPORTED_TARGETS)
install(TARGETS ${_braid_export_targets}
  EXPORT braidTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT braidTargets NAMESPACE braid:: DESTINATION ${BRAID_INSTALL_CMAKEDIR})

# Optional components (braid_library COMPONENT, e.g. torch where LibTorch was found): one
# export file each, braid_<component>Targets.cmake, loaded by braidConfig.cmake only when
# the component is asked for, after the component's own dependencies are found there.
get_property(_braid_components GLOBAL PROPERTY BRAID_COMPONENTS)
list(REMOVE_DUPLICATES _braid_components)
foreach(_component IN LISTS _braid_components)
  get_property(_component_targets GLOBAL PROPERTY BRAID_EXPORTED_TARGETS_${_component})
  install(TARGETS ${_component_targets}
    EXPORT braid_${_component}Targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT braid_${_component}Targets NAMESPACE braid:: DESTINATION ${BRAID_INSTALL_CMAKEDIR})
endforeach()

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
