# Precompiled <torch/torch.h> for braid's LibTorch targets. Parsing LibTorch's headers is
# about half of such a translation unit's compile time here (checkpoint.cc: 13.2 CPU-seconds,
# 7.5 with the precompiled header; building the header once costs 21).
#
# Two headers, because gcc refuses a header precompiled with -fPIC in a -fPIE compile (it
# falls back to parsing the headers, which -Winvalid-pch on the executables makes visible):
#   - the libraries' (braid_torch, braid_train, the test fixture): 33 translation units;
#   - the executables' (the torch unit tests, the rank programs of tests/torch, and braid-train's
#     and braid-serve's main.cc: braid-serve's took 40.4 s alone without it, 26.7 with it).
# The libraries' first target makes theirs; the executables' is made by a target of its own. Private to the build:
# nothing is installed, and a consumer of braid::torch is unaffected.

# braid_use_torch_pch(target [SKIP source...]): target's sources get the precompiled header,
# except SKIP (torch-free sources, which would only pay to load it).
function(braid_use_torch_pch target)
  cmake_parse_arguments(ARG "" "" "SKIP" ${ARGN})
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    # A dedicated owner without definitions: gcc also refuses a header precompiled with a macro
    # (a test's BRAID_TEST_BIN_DIR, say) that the reusing compile does not define.
    if(NOT TARGET braid_torch_executable_pch)
      add_executable(braid_torch_executable_pch ${PROJECT_SOURCE_DIR}/cmake/braid_torch_pch_main.cc)
      target_compile_options(braid_torch_executable_pch PRIVATE ${BRAID_WARNINGS})
      target_link_libraries(braid_torch_executable_pch PRIVATE braid::torch)  # LibTorch's flags
      target_precompile_headers(braid_torch_executable_pch PRIVATE <torch/torch.h>)
    endif()
    # Set, not added: it replaces a test's GoogleTest header (cmake/braid_gtest_pch.cmake).
    set_target_properties(${target} PROPERTIES PRECOMPILE_HEADERS_REUSE_FROM braid_torch_executable_pch)
    add_dependencies(${target} braid_torch_executable_pch)
    target_compile_options(${target} PRIVATE -Winvalid-pch)  # a refused header is a warning, not silence
  else()
    get_property(owner GLOBAL PROPERTY BRAID_TORCH_PCH_LIBRARY_OWNER)
    if(owner)
      target_precompile_headers(${target} REUSE_FROM ${owner})
    else()
      target_precompile_headers(${target} PRIVATE <torch/torch.h>)
      set_property(GLOBAL PROPERTY BRAID_TORCH_PCH_LIBRARY_OWNER ${target})
    endif()
  endif()
  if(ARG_SKIP)
    set_source_files_properties(${ARG_SKIP} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  endif()
endfunction()
