# The Debian package, built by CPack from the install rules
# (cmake/install.cmake): in a configured build,
#
#   cmake --build build && (cd build && cpack -G DEB)
#
# gives build/qual_VERSION_ARCH.deb: prefix /usr, the programs, the units,
# the sysusers.d and tmpfiles.d entries, the documents, man pages and shell
# completions, with /usr/share/doc/qual/copyright (dist/deb/copyright) in
# place of LICENSE and the maintainer scripts of dist/deb/ (they create the
# user and the folders and enable quald.socket; docs/service.md, "From the
# .deb"). Depends: comes from dpkg-shlibdeps (dpkg-dev) on the programs as
# built, so that a library linked later is named without a change here. The
# test package_deb (tests/package.cmake) builds, installs and purges it.
# Included from the top-level CMakeLists.txt after cmake/install.cmake.

# A build with QUAL_STATIC_DEPS carries jansson, libuv and libcrypto inside
# its programs: dpkg-shlibdeps would not name them and the copyright file
# would be wrong. Such builds are for carrying to the GPU machine, not for
# packages: no CPack configuration, so `cpack` says it has none.
if(QUAL_STATIC_DEPS)
  message(STATUS "QUAL_STATIC_DEPS is on: no Debian package (cmake/package.cmake)")
  return()
endif()

set(QUAL_PACKAGE_MAINTAINER "qual developers <qual@localhost.invalid>" CACHE STRING
    "The Maintainer: of the Debian package (NAME <ADDRESS>)")

set(QUAL_DEB_SOURCE ${QUAL_SOURCE_ROOT}/dist/deb)
set(QUAL_DEB_BUILD ${CMAKE_BINARY_DIR}/deb)

# Only for the package (EXCLUDE_FROM_ALL: a plain `cmake --install` leaves
# them out): the copyright file, and the changelog Debian requires, gzip -9n
# as Debian installs it.
configure_file(${QUAL_DEB_SOURCE}/changelog.in ${QUAL_DEB_BUILD}/changelog @ONLY)
add_custom_command(OUTPUT ${QUAL_DEB_BUILD}/changelog.gz
                   COMMAND sh -c "gzip -9n -c \"$1\" > \"$2\"" sh
                           ${QUAL_DEB_BUILD}/changelog ${QUAL_DEB_BUILD}/changelog.gz
                   DEPENDS ${QUAL_DEB_BUILD}/changelog VERBATIM)
add_custom_target(deb_changelog ALL DEPENDS ${QUAL_DEB_BUILD}/changelog.gz)
install(FILES ${QUAL_DEB_SOURCE}/copyright ${QUAL_DEB_BUILD}/changelog.gz
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT deb EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME qual)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "the qual developers")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES TRUE)
# One package of the components it names: every one but license (the
# copyright file stands in for LICENSE).
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL programs systemd doc man completion deb)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_NAME qual)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${QUAL_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# systemd-sysusers and systemd-tmpfiles for postinst, and systemd to run
# quald as a service; the client and qual-run work without it.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS systemd)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "GPU runtime compiler qualification service
qual says whether a new build of a GPU runtime compiler library (nvrtc or
hiprtc) is right and faster than a baseline: it compiles fixture kernels
with both, checks each against a float64 oracle, times them in alternating
pairs and prints JSON lines ending in a sign-test verdict.
This package holds the daemon quald (a systemd service behind
/run/qual/quald.sock), its client qualctl, the one-shot engine qual-run and
qual-judge, with man pages, shell completions and the documents.")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${QUAL_DEB_SOURCE}/postinst ${QUAL_DEB_SOURCE}/prerm ${QUAL_DEB_SOURCE}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
