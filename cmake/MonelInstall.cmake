# SPDX-License-Identifier: BSD-3-Clause
# Where `cmake --install` puts Monel: the one definition of the installed layout, used by
# `make install`, `make deb` (one Debian package per component) and the Python wheel.
#
# Components:
#   runtime  lib/libnccl.so.2 (the real file libnccl.so.2.32.3 and the soname link)
#   dev      include/nccl.h, include/monel.h, lib/libnccl.so, lib/libmonel.so, lib/pkgconfig/
#            monel.pc and nccl.pc, lib/cmake/Monel/ (find_package(Monel) -> Monel::nccl)
#   tools    bin/monelrun, bin/monel-info, libexec/monel/*_perf (nccl-tests' names, kept out
#            of bin/ so that they do not collide with nccl-tests' programs), their manual pages
#   doc      share/doc/monel/: README.md, LICENSE, CHANGELOG.md, docs/*.md
#
# The wheel (MONEL_WHEEL, on under scikit-build-core) puts libnccl.so.2 (one file), the headers,
# monel-info and monelrun inside the Python package: monel/lib, monel/include, monel/bin.
#
# Everything installed is relocatable ($ORIGIN run paths, a CMake package that finds its prefix
# from its own place, pkg-config files written for the prefix given at install time), so one
# build installs anywhere: `cmake --install build --prefix P`.

include(CMakePackageConfigHelpers)

option(MONEL_INSTALL_RPATH "Give installed programs a run path to the installed library ($ORIGIN)" ON)

file(STRINGS ${CMAKE_SOURCE_DIR}/include/monel.h monel_version_lines
     REGEX "^#define MONEL_VERSION_(MAJOR|MINOR|PATCH) ")
foreach(part MAJOR MINOR PATCH)
  string(REGEX REPLACE ".*#define MONEL_VERSION_${part} ([0-9]+).*" "\\1" MONEL_VERSION_${part}
                       "${monel_version_lines}")
endforeach()
set(MONEL_VERSION "${MONEL_VERSION_MAJOR}.${MONEL_VERSION_MINOR}.${MONEL_VERSION_PATCH}")
set(MONEL_NCCL_VERSION ${PROJECT_VERSION})

if(MONEL_WHEEL)
  set(MONEL_INSTALL_LIBDIR monel/lib)
  set(MONEL_INSTALL_BINDIR monel/bin)
  set(MONEL_INSTALL_INCLUDEDIR monel/include)
  # One real file under the soname (no VERSION property in the wheel): a wheel holds no links.
  install(TARGETS monel LIBRARY DESTINATION ${MONEL_INSTALL_LIBDIR} NAMELINK_SKIP)
  install(FILES include/nccl.h include/monel.h DESTINATION ${MONEL_INSTALL_INCLUDEDIR})
  # The licence beside the library as well (the wheel's metadata carries it in .dist-info).
  install(FILES LICENSE DESTINATION monel)
  foreach(prog monel-info monelrun)
    set_target_properties(${prog} PROPERTIES INSTALL_RPATH "$ORIGIN/../lib")
    install(TARGETS ${prog} RUNTIME DESTINATION ${MONEL_INSTALL_BINDIR})
  endforeach()
  return()
endif()

include(GNUInstallDirs)
set(MONEL_INSTALL_LIBDIR ${CMAKE_INSTALL_LIBDIR})
set(MONEL_INSTALL_BINDIR ${CMAKE_INSTALL_BINDIR})
set(MONEL_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
set(MONEL_INSTALL_TOOLDIR ${CMAKE_INSTALL_LIBEXECDIR}/monel)
set(MONEL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Monel)
set(MONEL_INSTALL_PCDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
set(MONEL_INSTALL_DOCDIR ${CMAKE_INSTALL_DOCDIR})

# Directories this install creates, recorded (with DESTDIR, and DESTDIR itself) before anything is
# copied, so that `make uninstall` removes those and only those: a prefix that was empty is left
# empty, and a directory that was there before (/usr/local/lib) stays. Runs first: it is the
# first rule.
set(monel_dirs ${MONEL_INSTALL_LIBDIR}/pkgconfig ${MONEL_INSTALL_CMAKEDIR} ${MONEL_INSTALL_BINDIR}
    ${MONEL_INSTALL_INCLUDEDIR} ${MONEL_INSTALL_TOOLDIR} ${MONEL_INSTALL_DOCDIR}
    ${MONEL_INSTALL_DOCDIR}/guide ${MONEL_INSTALL_DOCDIR}/results ${CMAKE_INSTALL_MANDIR}/man1)
install(CODE "
  set(record \"${CMAKE_BINARY_DIR}/install_created_dirs.txt\")
  set(root \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}\")
  set(created \"\")
  if(EXISTS \"\${record}\")
    file(STRINGS \"\${record}\" created REGEX \"^/\")
  endif()
  # The prefix and those of its parents that do not exist yet (DESTDIR/opt for /opt/monel).
  set(up \"\${root}\")
  while(NOT EXISTS \"\${up}\")
    list(APPEND candidates \"\${up}\")
    get_filename_component(up \"\${up}\" DIRECTORY)
  endwhile()
  foreach(rel ${monel_dirs})
    set(d \"\${root}\")
    string(REPLACE \"/\" \";\" parts \"\${rel}\")
    foreach(p IN LISTS parts)
      string(APPEND d \"/\${p}\")
      list(APPEND candidates \"\${d}\")
    endforeach()
  endforeach()
  foreach(d IN LISTS candidates)
    if(NOT EXISTS \"\${d}\")
      list(APPEND created \"\${d}\")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES created)
  string(REPLACE \";\" \"\\n\" text \"\${created}\")
  file(WRITE \"\${record}\" \"DESTDIR=\$ENV{DESTDIR}\\n\${text}\\n\")
")

# The library, its soname link (runtime) and the development links (dev).
set_target_properties(monel PROPERTIES EXPORT_NAME nccl)
install(TARGETS monel EXPORT MonelTargets
        LIBRARY DESTINATION ${MONEL_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
        INCLUDES DESTINATION ${MONEL_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_BINARY_DIR}/lib/libmonel.so DESTINATION ${MONEL_INSTALL_LIBDIR} COMPONENT dev)
install(FILES include/nccl.h include/monel.h DESTINATION ${MONEL_INSTALL_INCLUDEDIR} COMPONENT dev)

# Programs: a run path from where each is installed to the library, unless the library goes
# where the loader looks anyway (Debian packages: MONEL_INSTALL_RPATH=OFF).
function(monel_install_programs dir)
  file(RELATIVE_PATH rel /${dir} /${MONEL_INSTALL_LIBDIR})
  foreach(prog ${ARGN})
    if(TARGET ${prog})
      if(MONEL_INSTALL_RPATH)
        set_target_properties(${prog} PROPERTIES INSTALL_RPATH "$ORIGIN/${rel}")
      else()
        set_target_properties(${prog} PROPERTIES INSTALL_RPATH "")
      endif()
      install(TARGETS ${prog} RUNTIME DESTINATION ${dir} COMPONENT tools)
    endif()
  endforeach()
endfunction()
monel_install_programs(${MONEL_INSTALL_BINDIR} monelrun monel-info)
install(FILES docs/man/monelrun.1 docs/man/monel-info.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        COMPONENT tools)
monel_install_programs(${MONEL_INSTALL_TOOLDIR} ${BENCH_PROGRAMS})

# The CMake package: find_package(Monel) gives Monel::nccl.
install(EXPORT MonelTargets NAMESPACE Monel:: DESTINATION ${MONEL_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(cmake/MonelConfig.cmake.in ${CMAKE_BINARY_DIR}/MonelConfig.cmake
                              INSTALL_DESTINATION ${MONEL_INSTALL_CMAKEDIR}
                              PATH_VARS MONEL_INSTALL_INCLUDEDIR MONEL_INSTALL_LIBDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/MonelConfigVersion.cmake
                                 VERSION ${MONEL_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/MonelConfig.cmake ${CMAKE_BINARY_DIR}/MonelConfigVersion.cmake
        DESTINATION ${MONEL_INSTALL_CMAKEDIR} COMPONENT dev)

# pkg-config files, written at install time for the prefix that install is given (which may
# differ from CMAKE_INSTALL_PREFIX: `cmake --install build --prefix P`), then installed.
foreach(v LIBDIR INCLUDEDIR)
  string(TOLOWER ${v} name)
  if(IS_ABSOLUTE ${MONEL_INSTALL_${v}})
    set(pc_${name} ${MONEL_INSTALL_${v}})
  else()
    set(pc_${name} "\\\${prefix}/${MONEL_INSTALL_${v}}")
  endif()
endforeach()
foreach(pc monel nccl)
  install(CODE "
    set(prefix \"\${CMAKE_INSTALL_PREFIX}\")
    set(libdir \"${pc_libdir}\")
    set(includedir \"${pc_includedir}\")
    set(MONEL_VERSION ${MONEL_VERSION})
    set(MONEL_NCCL_VERSION ${MONEL_NCCL_VERSION})
    configure_file(\"${CMAKE_SOURCE_DIR}/cmake/${pc}.pc.in\" \"${CMAKE_BINARY_DIR}/pkgconfig/${pc}.pc\" @ONLY)
  " COMPONENT dev)
  install(FILES ${CMAKE_BINARY_DIR}/pkgconfig/${pc}.pc DESTINATION ${MONEL_INSTALL_PCDIR} COMPONENT dev)
endforeach()

# Documentation and the licence (BSD-3-Clause, LICENSE at the top of the tree).
file(GLOB monel_docs ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES README.md LICENSE ${monel_docs} DESTINATION ${MONEL_INSTALL_DOCDIR} COMPONENT doc)
install(FILES CHANGELOG.md DESTINATION ${MONEL_INSTALL_DOCDIR} COMPONENT doc OPTIONAL)
install(DIRECTORY docs/guide docs/results DESTINATION ${MONEL_INSTALL_DOCDIR} COMPONENT doc
        FILES_MATCHING PATTERN "*.md")

# `cmake --build build --target uninstall` (also `make uninstall`): removes what the last install
# from this build put there, then the directories it created, if empty.
add_custom_target(uninstall COMMAND ${CMAKE_COMMAND} -DBUILD=${CMAKE_BINARY_DIR} -P
                                    ${CMAKE_SOURCE_DIR}/cmake/MonelUninstall.cmake)
