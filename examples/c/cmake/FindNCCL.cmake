# SPDX-License-Identifier: BSD-3-Clause
# FindNCCL: finds an NCCL library (NVIDIA's, or Monel's drop-in libnccl.so.2) the way projects
# written for NCCL commonly do.
# Hints: NCCL_ROOT, NCCL_HOME or NCCL_DIR (CMake or environment variables; NCCL_ROOT is also
# honoured by CMake itself, CMP0074), NCCL_INCLUDE_DIR, NCCL_LIB_DIR.
# Result: NCCL_FOUND, NCCL_INCLUDE_DIRS, NCCL_LIBRARIES, NCCL_VERSION, target NCCL::NCCL.
set(_nccl_hints)
foreach(v NCCL_ROOT NCCL_HOME NCCL_DIR)
  if(DEFINED ${v})
    list(APPEND _nccl_hints ${${v}})
  endif()
  if(DEFINED ENV{${v}})
    list(APPEND _nccl_hints $ENV{${v}})
  endif()
endforeach()

find_path(NCCL_INCLUDE_DIR NAMES nccl.h
          HINTS ${NCCL_INCLUDE_DIR} ${_nccl_hints} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl
             HINTS ${NCCL_LIB_DIR} ${_nccl_hints} PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define NCCL_${part} +([0-9]+).*" "\\1" _nccl_${part} "${_nccl_lines}")
  endforeach()
  set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
                                  VERSION_VAR NCCL_VERSION)
if(NCCL_FOUND)
  set(NCCL_INCLUDE_DIRS ${NCCL_INCLUDE_DIR})
  set(NCCL_LIBRARIES ${NCCL_LIBRARY})
  if(NOT TARGET NCCL::NCCL)
    add_library(NCCL::NCCL UNKNOWN IMPORTED)
    set_target_properties(NCCL::NCCL PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                                                INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
  endif()
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
