# Install rules: the programs, the systemd units, the sysusers.d entry and the
# documents. Included from the top-level CMakeLists.txt after every
# add_subdirectory() that defines a program below.
#
#   cmake -S . -B build -DCMAKE_INSTALL_PREFIX=/usr && cmake --build build
#   sudo cmake --install build
#
# Components: programs, systemd (units and sysusers.d), doc. The systemd
# component needs nothing built: tests/systemd.cmake installs it alone.
include(GNUInstallDirs)

# All programs in one folder: qual-run finds qual-compile next to itself
# (compile/rtc.c), and quald finds its worker qual-run the same way.
install(TARGETS quald qualctl qual-run qual-compile qual-judge qual-view
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT programs)

# systemd looks for units and sysusers.d files under /usr/lib and also under
# /usr/local/lib, so paths relative to the prefix work for both. Not
# GNUInstallDirs' LIBDIR: that is lib/x86_64-linux-gnu on Debian, where
# systemd does not look.
set(QUAL_SYSTEMD_UNITDIR "lib/systemd/system" CACHE STRING
    "Where quald.service and quald.socket go (relative to the prefix, or absolute)")
set(QUAL_SYSUSERSDIR "lib/sysusers.d" CACHE STRING
    "Where the sysusers.d entry goes (relative to the prefix, or absolute)")

# The unit files name /usr/bin/quald and /usr/share/doc/qual; they are
# rewritten for the prefix when they are installed, not when cmake configures,
# so that `cmake --install build --prefix DIR` gets units naming DIR.
get_filename_component(QUAL_SOURCE_ROOT ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
set(QUAL_SYSTEMD_SOURCE ${QUAL_SOURCE_ROOT}/systemd)
install(CODE "
  set(qual_unit_source \"${QUAL_SYSTEMD_SOURCE}\")
  set(qual_unit_staging \"${CMAKE_BINARY_DIR}/systemd-install\")
  set(qual_bindir \"${CMAKE_INSTALL_BINDIR}\")
  set(qual_docdir \"${CMAKE_INSTALL_DOCDIR}\")
  set(qual_unitdir \"${QUAL_SYSTEMD_UNITDIR}\")
" COMPONENT systemd)
install(CODE [[
  # Runs at install time: CMAKE_INSTALL_PREFIX is the prefix being installed to.
  foreach(var bindir docdir unitdir)
    if(NOT IS_ABSOLUTE "${qual_${var}}")
      set(qual_${var} "${CMAKE_INSTALL_PREFIX}/${qual_${var}}")
    endif()
  endforeach()
  # One staging folder per destination: installs to different prefixes may
  # run at once (the tests do).
  string(MD5 dest "$ENV{DESTDIR}|${CMAKE_INSTALL_PREFIX}")
  string(APPEND qual_unit_staging "/${dest}")
  file(MAKE_DIRECTORY "${qual_unit_staging}")
  foreach(unit quald.service quald.socket)
    file(READ "${qual_unit_source}/${unit}" text)
    set(pairs "Documentation=file:/usr/share/doc/qual/|Documentation=file:${qual_docdir}/")
    if(unit STREQUAL "quald.service")
      list(APPEND pairs "ExecStart=/usr/bin/quald|ExecStart=${qual_bindir}/quald")
    endif()
    foreach(pair ${pairs})
      string(REPLACE "|" ";" pair "${pair}")
      list(GET pair 0 from)
      list(GET pair 1 to)
      string(FIND "${text}" "${from}" at)
      if(at EQUAL -1)
        message(FATAL_ERROR "cannot install '${unit}': it no longer contains '${from}'")
      endif()
      string(REPLACE "${from}" "${to}" text "${text}")
    endforeach()
    file(WRITE "${qual_unit_staging}/${unit}" "${text}")
    file(INSTALL DESTINATION "${qual_unitdir}" TYPE FILE
         PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
         FILES "${qual_unit_staging}/${unit}")
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${qual_unitdir}/${unit}")
  endforeach()
]] COMPONENT systemd)
install(FILES ${QUAL_SYSTEMD_SOURCE}/qual.sysusers DESTINATION ${QUAL_SYSUSERSDIR}
        RENAME qual.conf COMPONENT systemd)

file(GLOB QUAL_DOCS ${QUAL_SOURCE_ROOT}/docs/*.md)
install(FILES ${QUAL_SOURCE_ROOT}/README.md ${QUAL_DOCS}
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)
install(DIRECTORY ${QUAL_SOURCE_ROOT}/docs/schema DESTINATION ${CMAKE_INSTALL_DOCDIR}
        COMPONENT doc)
