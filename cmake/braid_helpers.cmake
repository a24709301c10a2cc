# One helper per target kind (as abseil's absl_cc_library): every braid target gets the same
# warnings, include root and C++ standard, and states its dependencies explicitly.

set(BRAID_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-missing-field-initializers)
if(BRAID_THREAD_SAFETY_ANALYSIS AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  list(APPEND BRAID_WARNINGS -Wthread-safety -Werror=thread-safety)
endif()

# Test code (GoogleTest bodies, the rank programs' scenarios, their fixtures) is compiled at
# -O1 where the build type optimises: it spends its time in the libraries, which keep the build
# type's -O3, and the test TUs compile in 55% of their -O3 time (docs/architecture.md,
# "Decisions"). -O1 defines the same macros as -O3, so the torch test targets still use the
# libraries' precompiled header (cmake/braid_torch_pch.cmake).
set(BRAID_TEST_CODE_OPTIONS $<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:-O1>)

# braid_test_code(TARGET): a target that only tests link, with the warnings and test code's -O1.
function(braid_test_code target)
  target_compile_options(${target} PRIVATE ${BRAID_WARNINGS} ${BRAID_TEST_CODE_OPTIONS})
endfunction()

# braid_libraries: every library below (scripts/thread_safety.sh builds just these).
add_custom_target(braid_libraries)

# braid_library(NAME base SOURCES a.cc ... [PUBLIC_HEADERS a.h ...] DEPS other_targets...
#               [COMPONENT torch] [INTERNAL])
# Creates the static library braid_<NAME> with alias braid::<NAME>, exported for install
# unless INTERNAL (code behind a tool, linked into it and tested, but not part of the API).
# PUBLIC_HEADERS is the layer's public API: exactly these headers are installed, under
# <prefix>/include/braid/<layer>/ as they sit in src/braid/<layer>/, so the same
# #include "braid/<layer>/x.h" works in the tree and against an install. Every other header
# of the layer is internal: usable inside the tree, never installed (docs/architecture.md,
# "Public and internal headers"). A public header includes only public headers, which the
# packaging test checks (tests/consumer/check_installed_headers.sh).
# COMPONENT puts the target in the package component of that name instead of the core
# (find_package(braid COMPONENTS torch); cmake/braid_install.cmake).
function(braid_library)
  cmake_parse_arguments(ARG "INTERNAL" "NAME;COMPONENT" "SOURCES;PUBLIC_HEADERS;DEPS" ${ARGN})
  if(ARG_INTERNAL AND (ARG_PUBLIC_HEADERS OR ARG_COMPONENT))
    message(FATAL_ERROR "braid_library(${ARG_NAME}): an INTERNAL library has no public headers and no component")
  endif()
  set(target braid_${ARG_NAME})
  add_library(${target} STATIC ${ARG_SOURCES})
  add_library(braid::${ARG_NAME} ALIAS ${target})
  target_compile_options(${target} PRIVATE ${BRAID_WARNINGS})
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  if(ARG_PUBLIC_HEADERS)
    target_sources(${target} PUBLIC
      FILE_SET HEADERS BASE_DIRS ${PROJECT_SOURCE_DIR}/src FILES ${ARG_PUBLIC_HEADERS})
  endif()
  target_link_libraries(${target} PUBLIC ${ARG_DEPS})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${ARG_NAME})
  add_dependencies(braid_libraries ${target})
  if(ARG_INTERNAL)
    return()
  endif()
  if(ARG_COMPONENT)
    set_property(GLOBAL APPEND PROPERTY BRAID_COMPONENTS ${ARG_COMPONENT})
    set_property(GLOBAL APPEND PROPERTY BRAID_EXPORTED_TARGETS_${ARG_COMPONENT} ${target})
  else()
    set_property(GLOBAL APPEND PROPERTY BRAID_EXPORTED_TARGETS ${target})
  endif()
endfunction()

# braid_tool(NAME braid-run SOURCES main.cc ... DEPS ...): an installed executable.
function(braid_tool)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_compile_options(${ARG_NAME} PRIVATE ${BRAID_WARNINGS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS})
  set_target_properties(${ARG_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
  install(TARGETS ${ARG_NAME} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()

# braid_test(NAME base_error_test SOURCES error_test.cc DEPS braid::base [LABELS unit] [TIMEOUT s]
#            [COST s] [GTEST_PCH_LIKE library])
# A GoogleTest executable whose cases are registered with CTest one by one. COST, the seconds a
# case typically takes, lets ctest start the long suites first in a fresh build tree (it has no
# recorded timings there and would otherwise run in definition order, leaving a long tail).
# GTEST_PCH_LIKE: the precompiled GoogleTest header made with that library's flags
# (cmake/braid_gtest_pch.cmake).
function(braid_test)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT;COST;GTEST_PCH_LIKE" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT BRAID_BUILD_TESTS)
    return()
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_COST)
    set(ARG_COST 0)
  endif()
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  braid_test_code(${ARG_NAME})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_compile_definitions(${ARG_NAME} PRIVATE
    BRAID_BIN_DIR="${PROJECT_BINARY_DIR}/bin"
    BRAID_TEST_BIN_DIR="${PROJECT_BINARY_DIR}/tests"
    BRAID_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  if(ARG_GTEST_PCH_LIKE)
    braid_use_gtest_pch(${ARG_NAME} LIKE ${ARG_GTEST_PCH_LIKE})  # cmake/braid_gtest_pch.cmake
  else()
    braid_use_gtest_pch(${ARG_NAME})
  endif()
  gtest_discover_tests(${ARG_NAME}
    TEST_PREFIX "${ARG_NAME}."
    DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}" COST ${ARG_COST})
endfunction()

# braid_test_program(NAME mp_sendrecv SOURCES ... DEPS ...): a rank program launched by the
# multi-process tests through braid-run (not a test by itself). Lands in build/tests/.
function(braid_test_program)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS" ${ARGN})
  if(NOT BRAID_BUILD_TESTS)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  braid_test_code(${ARG_NAME})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS})
  set_target_properties(${ARG_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
endfunction()
