# Format modules (stores/modules/format_module.h): the HDF5 store and the
# HDF5 export as shared objects that `slab` and `slabfs` load the first time
# a file needs them, so that no other command or mount pays for loading
# libhdf5 and the ~30 libraries it brings (13-16 ms of CPU a process on a
# 2-core VM; docs/architecture.md).
#
#   build/lib/slabfs/slabfs-hdf5.so          the HDF5 store (slab and slabfs)
#   build/lib/slabfs/slabfs-hdf5-export.so   the HDF5 export (slab)
#
# installed to PREFIX/lib/slabfs/, which the programs find as ../lib/slabfs
# from their own directory (build/bin, PREFIX/bin). A module links libhdf5
# and the shared libraries its code needs, and takes the engine (and, for
# the export, the tool's copy driver) from the program that loads it: the
# programs export their symbols and link those archives whole
# (slabfs_loads_format_modules), so every symbol is there when the loader
# resolves the module at once (RTLD_NOW).
#
# Every other program links the same code in: SLABFS_HDF5_LINKED (the
# Python module, the tests, the benchmarks) and SLABFS_HDF5_EXPORT_LINKED
# (the tool's tests).

set(SLABFS_MODULE_DIR_FROM_BIN "../lib/slabfs")
set(SLABFS_MODULE_OUTPUT_DIR ${CMAKE_BINARY_DIR}/lib/slabfs)
set(SLABFS_MODULE_INSTALL_DIR lib/slabfs)

# One id per build directory, chosen at its first configure: a module and the
# program that loads it must come from the same build.
if(NOT SLABFS_BUILD_ID)
  string(RANDOM LENGTH 12 ALPHABET 0123456789abcdef _id)
  set(SLABFS_BUILD_ID ${_id} CACHE INTERNAL "The id format modules and their programs share")
endif()
set(SLABFS_VERSION_FOR_MODULES ${PROJECT_VERSION})
configure_file(${CMAKE_SOURCE_DIR}/stores/modules/build_id.h.in ${CMAKE_BINARY_DIR}/generated/stores/modules/build_id.h
  @ONLY)
target_compile_definitions(slabfs_stores PRIVATE SLABFS_MODULE_DIR_FROM_BIN="${SLABFS_MODULE_DIR_FROM_BIN}")

set(SLABFS_HDF5_LINKED "")
set(SLABFS_HDF5_LOADED "")
set(SLABFS_HDF5_EXPORT_LINKED "")
set(SLABFS_HDF5_EXPORT_LOADED "")
set(SLABFS_FORMAT_MODULES "")
set(SLABFS_HDF5_EXPORT_SOURCES ${CMAKE_SOURCE_DIR}/tools/convert/hdf5_sink.cc)
set(SLABFS_HDF5_EXPORT_ENTRY_SOURCES ${CMAKE_SOURCE_DIR}/tools/convert/hdf5_export_module.cc
  ${CMAKE_SOURCE_DIR}/tools/convert/hdf5_export_loaded.cc ${CMAKE_SOURCE_DIR}/tools/convert/hdf5_export_linked.cc)

# A module made of its entry file and `archives` whole, linking `libs`.
function(slabfs_format_module target name entry)
  cmake_parse_arguments(M "" "" "ARCHIVES;LIBS;USES" ${ARGN})
  add_library(${target} MODULE ${entry})
  set(whole "")
  foreach(a ${M_ARCHIVES})
    list(APPEND whole $<TARGET_FILE:${a}>)
  endforeach()
  add_dependencies(${target} ${M_ARCHIVES})
  # Compiled as its archives are (their include directories and
  # definitions), linked with only the shared libraries of `libs`: the
  # engine comes from the program.
  foreach(u ${M_USES})
    target_include_directories(${target} PRIVATE $<TARGET_PROPERTY:${u},INTERFACE_INCLUDE_DIRECTORIES>)
    target_compile_definitions(${target} PRIVATE $<TARGET_PROPERTY:${u},INTERFACE_COMPILE_DEFINITIONS>)
  endforeach()
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/include
    ${CMAKE_BINARY_DIR}/generated)
  target_link_libraries(${target} PRIVATE -Wl,--whole-archive ${whole} -Wl,--no-whole-archive ${M_LIBS})
  set_target_properties(${target} PROPERTIES PREFIX "" OUTPUT_NAME slabfs-${name}
    LIBRARY_OUTPUT_DIRECTORY ${SLABFS_MODULE_OUTPUT_DIR} CXX_VISIBILITY_PRESET hidden)
  install(TARGETS ${target} LIBRARY DESTINATION ${SLABFS_MODULE_INSTALL_DIR})
  set(SLABFS_FORMAT_MODULES ${SLABFS_FORMAT_MODULES} ${target} PARENT_SCOPE)
endfunction()

if(SLABFS_TOOLS)
  set_target_properties(slabfs_hdf5_common slabfs_hdf5_store PROPERTIES POSITION_INDEPENDENT_CODE ON)

  # The HDF5 store.
  add_library(slabfs_hdf5_store_linked OBJECT ${CMAKE_SOURCE_DIR}/stores/hdf5/hdf5_store_module.cc
    ${CMAKE_SOURCE_DIR}/stores/hdf5/hdf5_store_linked.cc)
  target_include_directories(slabfs_hdf5_store_linked PRIVATE ${CMAKE_BINARY_DIR}/generated)
  target_link_libraries(slabfs_hdf5_store_linked PUBLIC slabfs_hdf5_store slabfs_stores)
  add_library(slabfs_hdf5_store_loaded OBJECT ${CMAKE_SOURCE_DIR}/stores/hdf5/hdf5_store_loaded.cc)
  target_link_libraries(slabfs_hdf5_store_loaded PUBLIC slabfs_stores)
  set_target_properties(slabfs_hdf5_store_linked slabfs_hdf5_store_loaded PROPERTIES POSITION_INDEPENDENT_CODE ON)
  slabfs_format_module(slabfs_hdf5_module hdf5 ${CMAKE_SOURCE_DIR}/stores/hdf5/hdf5_store_module.cc
    ARCHIVES slabfs_hdf5_store slabfs_hdf5_common
    USES slabfs_hdf5_store slabfs_hdf5_common
    LIBS ${HDF5_HL_LIBRARY} PkgConfig::HDF5 PkgConfig::LIBDEFLATE fmt::fmt spdlog::spdlog)
  set(SLABFS_HDF5_LINKED slabfs_hdf5_store_linked)
  set(SLABFS_HDF5_LOADED slabfs_hdf5_store_loaded)

  # The HDF5 export: hdf5_sink.cc, on the tool's copy driver.
  add_library(slabfs_hdf5_export STATIC ${SLABFS_HDF5_EXPORT_SOURCES})
  target_link_libraries(slabfs_hdf5_export PUBLIC slab_tool slabfs_hdf5_common)
  set_target_properties(slabfs_hdf5_export PROPERTIES POSITION_INDEPENDENT_CODE ON)
  # Compiled alone (it was one of the tool's unity batch), GCC 12 inlines
  # std::expected<H5Handle, Status>'s destructor into Hdf5Writer::Write and
  # takes the handle's -1 in the union for the Status's pointer
  # (-Wfree-nonheap-object, a false positive of GCC 12's <expected>).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(slabfs_hdf5_export PRIVATE -Wno-free-nonheap-object)
  endif()
  add_library(slabfs_hdf5_export_linked OBJECT ${CMAKE_SOURCE_DIR}/tools/convert/hdf5_export_module.cc
    ${CMAKE_SOURCE_DIR}/tools/convert/hdf5_export_linked.cc)
  target_include_directories(slabfs_hdf5_export_linked PRIVATE ${CMAKE_BINARY_DIR}/generated)
  target_link_libraries(slabfs_hdf5_export_linked PUBLIC slabfs_hdf5_export)
  add_library(slabfs_hdf5_export_loaded OBJECT ${CMAKE_SOURCE_DIR}/tools/convert/hdf5_export_loaded.cc)
  target_link_libraries(slabfs_hdf5_export_loaded PUBLIC slab_tool)
  slabfs_format_module(slabfs_hdf5_export_module hdf5-export ${CMAKE_SOURCE_DIR}/tools/convert/hdf5_export_module.cc
    ARCHIVES slabfs_hdf5_export slabfs_hdf5_common
    USES slab_tool slabfs_hdf5_common
    LIBS ${HDF5_HL_LIBRARY} PkgConfig::HDF5 fmt::fmt spdlog::spdlog)
  set(SLABFS_HDF5_EXPORT_LINKED slabfs_hdf5_export_linked)
  set(SLABFS_HDF5_EXPORT_LOADED slabfs_hdf5_export_loaded)
endif()

# A program that loads the modules: it exports its symbols and links the
# engine's archives, the stores' and `archives` whole, and building it builds
# the modules.
function(slabfs_loads_format_modules target)
  if(NOT SLABFS_FORMAT_MODULES)
    return()
  endif()
  set(whole "")
  foreach(a ${SLABFS_ENGINE_TARGETS} slabfs_store_base ${ARGN})
    list(APPEND whole $<TARGET_FILE:${a}>)
  endforeach()
  # As link options, which come before the program's objects and libraries:
  # an archive named whole after its normal mention would add its members twice.
  target_link_options(${target} PRIVATE -Wl,--whole-archive ${whole} -Wl,--no-whole-archive)
  set_target_properties(${target} PROPERTIES ENABLE_EXPORTS ON)
  add_dependencies(${target} ${SLABFS_FORMAT_MODULES} ${SLABFS_ENGINE_TARGETS} slabfs_store_base ${ARGN})
endfunction()
