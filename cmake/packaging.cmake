# SPDX-License-Identifier: BSD-3-Clause
# Debian packages, one per install component (see the install() rules):
#   librcc0     lib    the shared library (named after its soname, as Debian does;
#                      shlibs file and ldconfig trigger)
#   librcc-dev  dev    headers, librcc.a, the librcc.so link, rcc.pc, the CMake
#                      package, rcc(3) and rcc(7)
#   rcc-tools   tools  the five programs and their man pages
# Built from a configured and built tree with: cpack --config BUILD/CPackConfig.cmake
# (tests/package/deb.sh checks what they contain).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rcc)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# Each package's Description starts with its own summary line (the component
# descriptions below); CPackDeb puts a project-wide summary above them unless
# it is CPack's default one, so leave it at that.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_PACKAGE_VENDOR "the rcc authors")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(RCC_PACKAGE_MAINTAINER "rcc maintainers <rcc@invalid>" CACHE STRING
  "Maintainer field of the Debian packages")
set(CPACK_PACKAGE_CONTACT "${RCC_PACKAGE_MAINTAINER}")
set(CPACK_STRIP_FILES ON) # as Debian ships binaries; debug info stays in the build tree

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev)
if(RCC_BUILD_TOOLS)
  list(APPEND CPACK_COMPONENTS_ALL tools)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # NAME_VERSION-RELEASE_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(RCC_DEB_VERSION ${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE})

set(CPACK_DEBIAN_LIB_PACKAGE_NAME librcc${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_LIB_DESCRIPTION "RDMA communication core (rcc): shared library
rcc gives one C API for reliable-connected RDMA (SEND/RECV, WRITE, READ,
atomics) over libibverbs/librdmacm and over a software tcp transport with the
same semantics. This package holds the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME librcc-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The static library and rcc.pc's Libs.private name rdma-core's libraries.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${CPACK_DEBIAN_LIB_PACKAGE_NAME} (= ${RCC_DEB_VERSION})")
if(RCC_HAVE_VERBS)
  string(APPEND CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ", libibverbs-dev, librdmacm-dev")
endif()
set(CPACK_COMPONENT_DEV_DESCRIPTION "RDMA communication core (rcc): development files
Headers, the static library, pkg-config and CMake package files
(find_package(rcc CONFIG): rcc::rcc) and the rcc(3) and rcc(7) manual pages.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME rcc-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "RDMA communication core (rcc): tools
rcc-pingpong (latency), rcc-perf (perftest-class latency and bandwidth),
rcc-xfer (authenticated file transfer), rcc-mesh (N-node verified mesh) and
rcc-info (RDMA devices), with their manual pages. They are linked with rcc
statically.")

# Run-time dependencies from the binaries themselves when dpkg-shlibdeps is
# there (libc6, libibverbs1, librdmacm1, libssl3, ... at the versions built
# against; CPackDeb finds the binaries with file(1)); otherwise the list by
# hand, without versions.
find_program(RCC_DPKG_SHLIBDEPS dpkg-shlibdeps)
find_program(RCC_FILE_PROGRAM file)
if(RCC_DPKG_SHLIBDEPS AND RCC_FILE_PROGRAM)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_LIB_PACKAGE_DEPENDS "libc6")
  set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "libc6, libssl3")
  if(RCC_HAVE_VERBS)
    string(APPEND CPACK_DEBIAN_LIB_PACKAGE_DEPENDS ", libibverbs1, librdmacm1")
    string(APPEND CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS ", libibverbs1, librdmacm1")
  endif()
endif()
# librcc0's control files: shlibs, so that packages built against it depend
# on librcc0 of at least this version (dpkg-shlibdeps reads it), and the
# ldconfig trigger, so the library is found once installed. Written here
# rather than by CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS, which needs file(1).
set(RCC_DEB_CONTROL ${PROJECT_BINARY_DIR}/deb-control)
file(WRITE ${RCC_DEB_CONTROL}/shlibs
  "librcc ${PROJECT_VERSION_MAJOR} ${CPACK_DEBIAN_LIB_PACKAGE_NAME} (>= ${RCC_DEB_VERSION})\n")
file(WRITE ${RCC_DEB_CONTROL}/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${RCC_DEB_CONTROL}/shlibs ${RCC_DEB_CONTROL}/triggers)

# Debian wants each package's licence in /usr/share/doc/PACKAGE/copyright;
# EXCLUDE_FROM_ALL keeps it out of a plain `cmake --install`.
foreach(comp LIB DEV TOOLS)
  string(TOLOWER ${comp} c)
  if(c IN_LIST CPACK_COMPONENTS_ALL)
    install(FILES ${PROJECT_SOURCE_DIR}/LICENSE RENAME copyright
      DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${CPACK_DEBIAN_${comp}_PACKAGE_NAME}
      COMPONENT ${c} EXCLUDE_FROM_ALL)
  endif()
endforeach()

include(CPack)
