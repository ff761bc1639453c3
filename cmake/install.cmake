# Installing slabfs for users (`cmake --install build [--prefix P] [--strip]`,
# mount_scripts/install.sh, and the Debian package of cmake/package.cmake):
#
#   bin/slabfs, bin/slab, bin/umount-slabfs      (the top-level CMakeLists.txt)
#   lib.../libslabfs.so.0.1                      the engine as one shared library
#   lib/slabfs/slabfs-hdf5{,-export}.so          format modules (cmake/format_modules.cmake)
#   include/slabfs/*.h                           its public headers
#   lib.../cmake/slabfs/, lib.../pkgconfig/slabfs.pc   find_package(slabfs), pkg-config
#   share/man/man1/slabfs.1.gz, slab.1.gz        from --help (help2man, when installed)
#   share/bash-completion/completions/slab
#   lib/systemd/system/slabfs@.service           the paths set to this prefix
#   share/doc/slabfs/                            README, LICENSE, docs/*.md
#
# The library's directory depends on the prefix and is chosen when installing,
# not when configuring, so that one build installs both into /usr/local (lib/)
# and, for the Debian package, into /usr (lib/x86_64-linux-gnu/, Debian's
# multiarch directory). Everything that names it is written at install time
# by cmake/install_dev_files.cmake.

# ---------------------------------------------------------------- libslabfs
# A shared library rather than a static one: the engine's own dependencies
# (spdlog, fmt, libdeflate) stay private to it, so a program needs only the
# slabfs headers and -lslabfs (no -dev package of those libraries), and the
# Debian package's dependencies come from dpkg-shlibdeps. The engine archive is
# already position independent where the Python module is built; the library
# is made of it whole, so nothing is compiled twice. Its ABI is not promised
# stable before 1.0: the soname carries major.minor.
if(SLABFS_SANITIZE STREQUAL "" AND NOT SLABFS_FUZZ)
  set_target_properties(${SLABFS_ENGINE_TARGETS} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  add_library(slabfs_shared SHARED ${CMAKE_SOURCE_DIR}/packaging/libslabfs.cc)
  # Every layer's archive whole (the public functions of fsck, npy and slices
  # are called by nothing in the engine), then the engine as usual for the
  # libraries it needs. Not $<LINK_LIBRARY:WHOLE_ARCHIVE,...>: CMake refuses
  # an archive linked both whole and as a dependency of another.
  set(_slabfs_whole "")
  foreach(t ${SLABFS_ENGINE_TARGETS})
    list(APPEND _slabfs_whole $<TARGET_FILE:${t}>)
  endforeach()
  target_link_libraries(slabfs_shared PRIVATE -Wl,--whole-archive ${_slabfs_whole} -Wl,--no-whole-archive
    slabfs_engine)
  set_target_properties(slabfs_shared PROPERTIES
    OUTPUT_NAME slabfs
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
  set(SLABFS_INSTALL_LIBRARY ON)
else()
  set(SLABFS_INSTALL_LIBRARY OFF)
endif()

# The install-time layout: the library directory, and the Python site
# directory that python/CMakeLists.txt installs into.
if(CMAKE_LIBRARY_ARCHITECTURE AND EXISTS /etc/debian_version)
  set(SLABFS_USR_LIBDIR lib/${CMAKE_LIBRARY_ARCHITECTURE})
else()
  set(SLABFS_USR_LIBDIR ${CMAKE_INSTALL_LIBDIR})
endif()
install(CODE "
  if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
    set(SLABFS_LIBDIR \"${SLABFS_USR_LIBDIR}\")
  else()
    set(SLABFS_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  endif()" ALL_COMPONENTS)

if(SLABFS_INSTALL_LIBRARY)
  install(TARGETS slabfs_shared LIBRARY DESTINATION "\${SLABFS_LIBDIR}")
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/slabfs DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.h")
  include(CMakePackageConfigHelpers)
  # Any 0.1.x is what 0.1.0 was built against; 0.2 may differ.
  write_basic_package_version_file(${CMAKE_BINARY_DIR}/packaging/slabfsConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${CMAKE_BINARY_DIR}/packaging/slabfsConfigVersion.cmake
          DESTINATION "\${SLABFS_LIBDIR}/cmake/slabfs")
endif()

# ---------------------------------------------------------------- man pages
# From each program's --help and --version, with the sections help2man cannot
# find there (description, examples, files, see also) in packaging/man/*.h2m.
find_program(SLABFS_HELP2MAN help2man)
find_program(SLABFS_GZIP gzip)
if(SLABFS_HELP2MAN AND SLABFS_GZIP)
  set(SLABFS_MAN_DIR ${CMAKE_BINARY_DIR}/man)
  set(SLABFS_MAN_PROGRAMS slabfs)
  if(TARGET slab)
    list(APPEND SLABFS_MAN_PROGRAMS slab)
  endif()
  foreach(prog ${SLABFS_MAN_PROGRAMS})
    add_custom_command(
      OUTPUT ${SLABFS_MAN_DIR}/${prog}.1.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${SLABFS_MAN_DIR}
      # By name on PATH, so the page says "slab", not build/bin/slab.
      COMMAND ${CMAKE_COMMAND} -E env "PATH=$<TARGET_FILE_DIR:${prog}>:$ENV{PATH}"
              ${SLABFS_HELP2MAN} --no-info --section 1
              --include ${CMAKE_SOURCE_DIR}/packaging/man/${prog}.h2m
              --output ${SLABFS_MAN_DIR}/${prog}.1 ${prog}
      # -n: no name or time stamp in the archive, so equal pages are equal files.
      COMMAND ${SLABFS_GZIP} -9nf ${SLABFS_MAN_DIR}/${prog}.1
      DEPENDS ${prog} ${CMAKE_SOURCE_DIR}/packaging/man/${prog}.h2m
      COMMENT "man page ${prog}(1)"
      VERBATIM)
    list(APPEND SLABFS_MAN_PAGES ${SLABFS_MAN_DIR}/${prog}.1.gz)
  endforeach()
  add_custom_target(slabfs_man ALL DEPENDS ${SLABFS_MAN_PAGES})
  install(FILES ${SLABFS_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "slabfs: no man pages (they need help2man, which install_deps.sh installs)")
endif()

# ---------------------------------------------------------------- the rest
if(TARGET slab)
  install(FILES ${CMAKE_SOURCE_DIR}/packaging/slab.bash-completion
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME slab)
endif()
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/LICENSE
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Where Debian looks for a package's license.
install(FILES ${CMAKE_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md")

# Written at install time: the CMake config and pkg-config files (they name
# the library's directory) and the systemd service with this prefix's paths.
install(CODE "
  set(SLABFS_SOURCE_DIR \"${CMAKE_SOURCE_DIR}\")
  set(SLABFS_VERSION \"${PROJECT_VERSION}\")
  set(SLABFS_SOVERSION \"${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}\")
  set(SLABFS_INSTALL_LIBRARY ${SLABFS_INSTALL_LIBRARY})
  set(SLABFS_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
  set(SLABFS_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(SLABFS_DOCDIR \"${CMAKE_INSTALL_DOCDIR}\")
  include(\"${CMAKE_SOURCE_DIR}/cmake/install_dev_files.cmake\")")
