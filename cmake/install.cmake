# Install rules: the programs, the systemd units, the sysusers.d and
# tmpfiles.d entries, the documents, the man pages and the shell completions.
# Included from the top-level CMakeLists.txt after every add_subdirectory()
# that defines a program below.
#
#   cmake -S . -B build -DCMAKE_INSTALL_PREFIX=/usr && cmake --build build
#   sudo cmake --install build
#
# Components: programs, systemd (units, sysusers.d, tmpfiles.d), doc (README,
# docs/, LICENSE), man, completion. The systemd component needs nothing
# built: tests/systemd.cmake installs it alone. The package (cmake/package.cmake)
# takes them all but LICENSE, which it carries as its copyright file.
include(GNUInstallDirs)

# All programs in one folder: qual-run finds qual-compile next to itself
# (compile/rtc.c), and quald finds its worker qual-run the same way.
install(TARGETS quald qualctl qual-run qual-compile qual-judge qual-view qual-calibrate qual-slurm
        qual-bisect
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT programs)

# systemd looks for units and sysusers.d files under /usr/lib and also under
# /usr/local/lib, so paths relative to the prefix work for both. Not
# GNUInstallDirs' LIBDIR: that is lib/x86_64-linux-gnu on Debian, where
# systemd does not look.
set(QUAL_SYSTEMD_UNITDIR "lib/systemd/system" CACHE STRING
    "Where quald.service and quald.socket go (relative to the prefix, or absolute)")
set(QUAL_SYSUSERSDIR "lib/sysusers.d" CACHE STRING
    "Where the sysusers.d entry goes (relative to the prefix, or absolute)")
set(QUAL_TMPFILESDIR "lib/tmpfiles.d" CACHE STRING
    "Where the tmpfiles.d entry goes (relative to the prefix, or absolute)")

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

install(FILES ${QUAL_SYSTEMD_SOURCE}/qual.tmpfiles DESTINATION ${QUAL_TMPFILESDIR}
        RENAME qual.conf COMPONENT systemd)

# The documents keep the source tree's layout under the docdir (README.md at
# the top, docs/ below it), so that their relative links work where they are
# installed: README.md links docs/x.md, the docs link each other and
# docs/schema/. Of what README.md links outside docs/, only the two summaries
# of the GPU runs go (docs/gpu-runs/README.md, bench/RESULTS.md), not the
# runs' evidence (tens of MiB). The test install_docs checks every relative
# link of every installed .md file (tests/install.cmake).
file(GLOB QUAL_DOCS ${QUAL_SOURCE_ROOT}/docs/*.md)
install(FILES ${QUAL_SOURCE_ROOT}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
        COMPONENT doc)
install(FILES ${QUAL_DOCS} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT doc)
install(DIRECTORY ${QUAL_SOURCE_ROOT}/docs/schema DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        COMPONENT doc)
install(FILES ${QUAL_SOURCE_ROOT}/docs/gpu-runs/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs/gpu-runs COMPONENT doc)
install(FILES ${QUAL_SOURCE_ROOT}/bench/RESULTS.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/bench COMPONENT doc)
# A component of its own: the .deb has /usr/share/doc/qual/copyright instead.
install(FILES ${QUAL_SOURCE_ROOT}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR}
        COMPONENT license)

# Man pages (docs/man/), compressed as Debian installs them (gzip -9n: no
# name or time stamp in the header, so that a rebuild gives the same bytes);
# man(1) reads them either way. tests/man.cmake lints the sources and checks
# them against each program's --help.
file(GLOB QUAL_MAN_PAGES ${QUAL_SOURCE_ROOT}/docs/man/*.[1-8])
set(QUAL_MAN_GZ "")
foreach(page ${QUAL_MAN_PAGES})
  get_filename_component(name ${page} NAME)
  string(REGEX REPLACE ".*\\.([1-8])$" "\\1" section ${name})
  set(gz ${CMAKE_BINARY_DIR}/man/${name}.gz)
  add_custom_command(OUTPUT ${gz}
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
                     COMMAND sh -c "gzip -9n -c \"$1\" > \"$2\"" sh ${page} ${gz}
                     DEPENDS ${page} VERBATIM)
  list(APPEND QUAL_MAN_GZ ${gz})
  install(FILES ${gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT man)
endforeach()
add_custom_target(man_pages ALL DEPENDS ${QUAL_MAN_GZ})

# Shell completions (dist/completion/): bash-completion loads a command's
# completion on first use from a file named after the command, so the one
# script goes in under each name; zsh's compinit reads the #compdef line of
# _qual, which names all four commands.
foreach(cmd qualctl quald qual-run qual-judge)
  install(FILES ${QUAL_SOURCE_ROOT}/dist/completion/qual.bash
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
          RENAME ${cmd} COMPONENT completion)
endforeach()
install(FILES ${QUAL_SOURCE_ROOT}/dist/completion/_qual
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions COMPONENT completion)
