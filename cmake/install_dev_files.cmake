# Run by `cmake --install` (cmake/install.cmake sets the SLABFS_* variables):
# writes the files that name install-time paths into
# $DESTDIR$CMAKE_INSTALL_PREFIX and adds them to the install manifest.

set(_root "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")

function(slabfs_write_installed rel content)
  set(dest "${_root}/${rel}")
  message(STATUS "Installing: ${dest}")
  file(WRITE "${dest}" "${content}")
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${dest}")
  set(CMAKE_INSTALL_MANIFEST_FILES "${CMAKE_INSTALL_MANIFEST_FILES}" PARENT_SCOPE)
endfunction()

if(SLABFS_INSTALL_LIBRARY)
  # find_package(slabfs): the prefix is found from the config file's own
  # place, so an installed tree can be moved.
  file(RELATIVE_PATH _config_to_prefix "${_root}/${SLABFS_LIBDIR}/cmake/slabfs" "${_root}")
  file(READ "${SLABFS_SOURCE_DIR}/cmake/slabfsConfig.cmake.in" _template)
  set(SLABFS_CONFIG_TO_PREFIX "${_config_to_prefix}")
  string(CONFIGURE "${_template}" _config @ONLY)
  slabfs_write_installed("${SLABFS_LIBDIR}/cmake/slabfs/slabfsConfig.cmake" "${_config}")

  set(SLABFS_PREFIX "${CMAKE_INSTALL_PREFIX}")
  file(READ "${SLABFS_SOURCE_DIR}/cmake/slabfs.pc.in" _template)
  string(CONFIGURE "${_template}" _pc @ONLY)
  slabfs_write_installed("${SLABFS_LIBDIR}/pkgconfig/slabfs.pc" "${_pc}")
endif()

# The systemd service, pointing at this prefix's programs and documentation:
# the system unit directory under the prefix (systemd reads /usr/lib and
# /usr/local/lib/systemd/system), and beside the other examples.
file(READ "${SLABFS_SOURCE_DIR}/mount_scripts/systemd/slabfs@.service" _unit)
string(REPLACE "/usr/local/bin/" "${CMAKE_INSTALL_PREFIX}/${SLABFS_BINDIR}/" _unit "${_unit}")
string(REPLACE "file:///usr/local/share/doc/slabfs/" "file://${CMAKE_INSTALL_PREFIX}/${SLABFS_DOCDIR}/" _unit "${_unit}")
slabfs_write_installed("lib/systemd/system/slabfs@.service" "${_unit}")
slabfs_write_installed("share/slabfs/systemd/slabfs@.service" "${_unit}")
