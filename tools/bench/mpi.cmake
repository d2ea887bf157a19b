# SPDX-License-Identifier: BSD-3-Clause
# The MPI_Allreduce reference program (mpi_allreduce.c), for tools/bench/cpu-vs-mpi. Optional:
# built only where CMake finds MPI for C. Include this file from tools/bench/CMakeLists.txt.
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  add_executable(mpi_allreduce ${CMAKE_CURRENT_LIST_DIR}/mpi_allreduce.c)
  target_link_libraries(mpi_allreduce PRIVATE MPI::MPI_C)
  set_target_properties(mpi_allreduce PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
else()
  message(STATUS "MPI not found: tools/bench/mpi_allreduce is not built")
endif()
