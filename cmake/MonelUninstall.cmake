# SPDX-License-Identifier: BSD-3-Clause
# Removes what the last `cmake --install` from build directory BUILD installed (its
# install_manifest.txt, under the DESTDIR of that install or the one given now), then the
# directories that install created (install_created_dirs.txt, recorded by the first install
# rule) when they are empty, deepest first, so that the prefix is left as it was before.
# Usage: cmake -DBUILD=<build dir> -P cmake/MonelUninstall.cmake
if(NOT BUILD)
  message(FATAL_ERROR "MonelUninstall.cmake: give the build directory: -DBUILD=<dir>")
endif()
set(manifest "${BUILD}/install_manifest.txt")
if(NOT EXISTS "${manifest}")
  message(FATAL_ERROR "${manifest} is missing: nothing was installed from ${BUILD} "
                      "(run make install first, with the same BUILD)")
endif()
# install_manifest.txt names files without DESTDIR: the one of that install, recorded by the
# first install rule, unless DESTDIR is given now.
set(record "${BUILD}/install_created_dirs.txt")
set(dirs "")
set(destdir "")
if(EXISTS "${record}")
  file(STRINGS "${record}" dirs REGEX "^/")
  file(STRINGS "${record}" destdir REGEX "^DESTDIR=")
  string(REGEX REPLACE "^DESTDIR=" "" destdir "${destdir}")
endif()
if(DEFINED ENV{DESTDIR})
  set(destdir "$ENV{DESTDIR}")
endif()
file(STRINGS "${manifest}" files)
set(removed 0)
foreach(f IN LISTS files)
  set(f "${destdir}${f}")
  if(IS_SYMLINK "${f}" OR EXISTS "${f}")
    file(REMOVE "${f}")
    if(IS_SYMLINK "${f}" OR EXISTS "${f}")
      message(FATAL_ERROR "could not remove ${f}: check the permissions (sudo make uninstall)")
    endif()
    math(EXPR removed "${removed} + 1")
  endif()
endforeach()

# Deepest first: a longer path sorts after its parent, so the reversed order removes children
# before their parents.
list(SORT dirs)
list(REVERSE dirs)
set(kept "")
foreach(d IN LISTS dirs)
  if(IS_DIRECTORY "${d}")
    file(GLOB left LIST_DIRECTORIES true "${d}/*" "${d}/.*")
    if(left)
      list(APPEND kept "${d}")
    else()
      file(REMOVE_RECURSE "${d}") # empty: nothing but the directory goes
    endif()
  endif()
endforeach()
file(REMOVE "${manifest}" "${record}")
message(STATUS "Monel uninstalled: ${removed} files removed")
foreach(d IN LISTS kept)
  message(STATUS "kept ${d}: it holds files that Monel did not install")
endforeach()
