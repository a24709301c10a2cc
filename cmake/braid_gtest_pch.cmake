# Precompiled GoogleTest and GoogleMock headers for braid's test executables (braid_test). Parsing
# them is most of a unit test file's compile: an empty test that includes both takes ~1.9
# CPU-seconds at -O1 here, against ~3.3 for the average test file whole (docs/architecture.md,
# "Decisions").
#
# gcc only. gcc checks a precompiled header against the macros it uses and falls back to parsing
# the headers when they differ (-Winvalid-pch makes that visible); clang instead refuses a header
# made with other command-line macros, and the tests' macros differ from target to target (their
# DEPS), so the clang trees (sanitizer lanes, fuzzers) parse the headers as before. Targets that
# take the torch header (cmake/braid_torch_pch.cmake) replace this one. Private to the build.

# braid_use_gtest_pch(target [LIKE library]): target's sources get the precompiled GoogleTest
# headers. The header's owner compiles as test code does, with GoogleTest's own definitions
# and no others: gcc refuses a header made with a macro the reusing compile does not define, and
# ignores the tests' own macros (BRAID_BIN_DIR, FMT_SHARED, ...), which GoogleTest does not use.
# LIKE: a header of its own, compiled with `library`'s usage requirements too, for tests whose
# flags change what GoogleTest's headers see (LibTorch's -D_GLIBCXX_USE_CXX11_ABI: the tests
# over braid::train).
function(braid_use_gtest_pch target)
  cmake_parse_arguments(ARG "" "LIKE" "" ${ARGN})
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    return()
  endif()
  set(owner braid_gtest_pch)
  if(ARG_LIKE)
    set(owner braid_gtest_pch_like_${ARG_LIKE})
  endif()
  if(NOT TARGET ${owner})
    add_executable(${owner} ${PROJECT_SOURCE_DIR}/cmake/braid_gtest_pch_main.cc)
    braid_test_code(${owner})
    target_compile_features(${owner} PRIVATE cxx_std_20)
    target_link_libraries(${owner} PRIVATE GTest::gtest GTest::gmock ${ARG_LIKE})
    target_precompile_headers(${owner} PRIVATE <gtest/gtest.h> <gmock/gmock.h>)
  endif()
  set_target_properties(${target} PROPERTIES PRECOMPILE_HEADERS_REUSE_FROM ${owner})
  add_dependencies(${target} ${owner})
  target_compile_options(${target} PRIVATE -Winvalid-pch)  # a refused header is a warning, not silence
endfunction()
