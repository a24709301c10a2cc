# One precompiled <torch/torch.h> for braid's LibTorch libraries (braid_torch, braid_train).
# Parsing LibTorch's headers is about half of such a translation unit's compile time here
# (checkpoint.cc: 13.2 CPU-seconds, 7.5 with the precompiled header; building the header once
# costs 21), and these two libraries hold 32 of the tree's 41 translation units that include
# it. Executables are left alone: gcc refuses a header precompiled with -fPIC in a -fPIE
# compile, and the 9 executable sources that include torch would not pay for a second one.
# Private to the build: nothing is installed, and a consumer of braid::torch is unaffected.

# braid_use_torch_pch(target [SKIP source...]): target's sources get the precompiled header,
# except SKIP (torch-free sources, which would only pay to load it). The first target makes
# it; later ones reuse it.
function(braid_use_torch_pch target)
  cmake_parse_arguments(ARG "" "" "SKIP" ${ARGN})
  get_property(owner GLOBAL PROPERTY BRAID_TORCH_PCH_OWNER)
  if(owner)
    target_precompile_headers(${target} REUSE_FROM ${owner})
  else()
    target_precompile_headers(${target} PRIVATE <torch/torch.h>)
    set_property(GLOBAL PROPERTY BRAID_TORCH_PCH_OWNER ${target})
  endif()
  if(ARG_SKIP)
    set_source_files_properties(${ARG_SKIP} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  endif()
endfunction()
