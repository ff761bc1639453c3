# The Debian package: `cd build && cpack -G DEB` (or packaging/build_deb.sh)
# makes slabfs_VERSION_ARCH.deb from this build, installed under /usr and
# stripped: the programs, libslabfs with its headers, CMake and pkg-config
# files, man pages, bash completion, the systemd service, the docs, and the
# Python package for Debian's python3 (/usr/lib/python3/dist-packages).
#
# cpack installs from the build as it is and builds nothing: build first
# (`cmake --build build`). Without this, cpack would first build the target
# "all" (tests and benchmarks included) through "preinstall".
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME slabfs)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "slabfs developers <slabfs@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "FUSE filesystem over containers of n-dimensional arrays")
set(CPACK_PACKAGE_DESCRIPTION
"slabfs mounts a container of chunked, compressed n-dimensional arrays as a
directory tree: groups are directories and datasets are files holding their
elements in C order, so cat, dd, numpy.memmap and other Unix tools work on
them. The package holds the daemon slabfs (mount -t fuse.slabfs, fstab,
systemd), the command-line tool slab (HDF5, netCDF-4 and Zarr import and
export), the library libslabfs with its C++23 headers, and the Python
package slabfs (h5py-like, with Dask and xarray support).")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # slabfs_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The shared libraries each program and module links come from
# dpkg-shlibdeps (libfuse3-3, libhdf5, libdeflate0, libblosc1, ...); what it
# cannot see is listed here: fusermount3 and mount.fuse3, the Python that
# the module is built for, and numpy, which the package imports.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # and the ldconfig trigger for libslabfs
set(_slabfs_deb_depends "fuse3")
if(DEFINED SLABFS_PYTHON_EXECUTABLE)
  execute_process(COMMAND ${SLABFS_PYTHON_EXECUTABLE} -c
    "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"
    OUTPUT_VARIABLE _slabfs_py OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REPLACE "." ";" _slabfs_py_parts "${_slabfs_py}")
  list(GET _slabfs_py_parts 1 _slabfs_py_minor)
  math(EXPR _slabfs_py_next "${_slabfs_py_minor} + 1")
  string(APPEND _slabfs_deb_depends
    ", python3 (>= ${_slabfs_py}~), python3 (<< 3.${_slabfs_py_next}), python3-numpy")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_slabfs_deb_depends}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "bash-completion, python3-dask, python3-xarray")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "hdf5-tools, netcdf-bin, python3-h5py, python3-zarr")
# Byte-compile the Python package after install and remove the compiled
# files before removal, so that `apt-get remove` leaves no directory behind.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/packaging/debian/postinst ${CMAKE_SOURCE_DIR}/packaging/debian/prerm
    ${CMAKE_SOURCE_DIR}/packaging/debian/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
