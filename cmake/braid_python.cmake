# Finds what the torch.distributed backend "braid" (src/braid/python/, docs/python.md) needs:
# LibTorch (already found), the Python that has torch (BRAID_PYTHON), its headers, pybind11 and
# libtorch_python. Sets BRAID_PYTHON_FOUND; anything missing turns the backend off with one
# status line, never an error, so builds without Python torch are unaffected.
option(BRAID_WITH_PYTHON "Build the torch.distributed backend 'braid' when Python torch and pybind11 are found" ON)
# /usr/bin/python3 by name: another Python (pyenv, a venv without torch) may come first on PATH.
set(BRAID_PYTHON "/usr/bin/python3" CACHE FILEPATH "The Python (with torch) the backend is built for and tested with")
set(BRAID_PYTHON_FOUND OFF)

function(braid_find_python reason_var)
  if(NOT BRAID_WITH_PYTHON)
    set(${reason_var} "BRAID_WITH_PYTHON=OFF" PARENT_SCOPE)
    return()
  endif()
  if(NOT Torch_FOUND)
    set(${reason_var} "LibTorch not found" PARENT_SCOPE)
    return()
  endif()
  execute_process(COMMAND ${BRAID_PYTHON} -c "import torch, sys; print(torch.__version__); print(f'{sys.version_info[0]}.{sys.version_info[1]}')"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    set(${reason_var} "${BRAID_PYTHON} cannot import torch" PARENT_SCOPE)
    return()
  endif()
  string(REPLACE "\n" ";" out "${out}")
  list(GET out 0 torch_version)
  list(GET out 1 python_version)
  set(PYBIND11_FINDPYTHON ON)
  set(Python_EXECUTABLE ${BRAID_PYTHON})
  find_package(pybind11 CONFIG QUIET)
  if(NOT pybind11_FOUND)
    set(${reason_var} "pybind11 not found (Debian pybind11-dev)" PARENT_SCOPE)
    return()
  endif()
  find_library(BRAID_TORCH_PYTHON_LIBRARY torch_python HINTS ${TORCH_INSTALL_PREFIX}/lib)
  if(NOT BRAID_TORCH_PYTHON_LIBRARY)
    set(${reason_var} "libtorch_python not found" PARENT_SCOPE)
    return()
  endif()
  set(BRAID_PYTHON_FOUND ON PARENT_SCOPE)
  set(BRAID_PYTHON_VERSION ${python_version} PARENT_SCOPE)
  set(${reason_var} "torch ${torch_version}, Python ${python_version}" PARENT_SCOPE)
endfunction()

braid_find_python(braid_python_reason)
if(BRAID_PYTHON_FOUND)
  # pybind11's own targets must be visible where the extension is defined: find it again here
  # (the function's find_package result is scoped to the function).
  set(PYBIND11_FINDPYTHON ON)
  set(Python_EXECUTABLE ${BRAID_PYTHON})
  find_package(pybind11 CONFIG REQUIRED)
  # Not CMAKE_INSTALL_LIBDIR: with the prefix /usr that is lib/<multiarch>, not on sys.path.
  set(BRAID_PYTHON_INSTALL_DIR "lib/python${BRAID_PYTHON_VERSION}/dist-packages" CACHE STRING
      "Where cmake --install puts the braid Python package (relative: under the prefix)")
  message(STATUS "braid: building the torch.distributed backend 'braid' (${braid_python_reason})")
else()
  message(STATUS "braid: not building the torch.distributed backend 'braid': ${braid_python_reason}")
endif()
