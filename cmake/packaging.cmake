# The Debian package: what `cmake --install` puts where, and CPack's DEB settings. Included at the
# end of the top-level CMakeLists.txt; `scripts/package` (or `cpack -G DEB` in the build
# directory) makes build/packages/fulltime_<version>_amd64.deb. packaging/README.md says what
# is in it and what its maintainer scripts do.
#
# Destinations: the binary is relative to the prefix (/usr in the package), the files whose place
# Debian fixes are absolute (/etc/fulltime, /lib/systemd/system; CPack's DEB generator installs
# them under its staging directory, never into the build machine's /etc).

set(FULLTIME_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)

install(TARGETS fulltime RUNTIME DESTINATION bin)
# The packaged configuration, a conffile (packaging/debian/conffiles): the engine merges it over
# its built-in defaults (the table of settings, config/settings_table.cpp).
install(FILES ${FULLTIME_PACKAGING_DIR}/fulltime.json DESTINATION /etc/fulltime)
install(FILES ${FULLTIME_PACKAGING_DIR}/fulltime.service DESTINATION /lib/systemd/system)
# The documentation an operator needs on the machine: operations.md is the runbook (OPTIONAL:
# the package is still made without it), config.md documents every key of the packaged config.
install(FILES
  ${PROJECT_SOURCE_DIR}/README.md
  ${PROJECT_SOURCE_DIR}/docs/config.md
  ${FULLTIME_PACKAGING_DIR}/copyright
  DESTINATION share/doc/fulltime)
install(FILES ${PROJECT_SOURCE_DIR}/docs/operations.md DESTINATION share/doc/fulltime OPTIONAL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fulltime)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "Fulltime")
set(CPACK_PACKAGE_CONTACT "Fulltime maintainers <maintainers@fulltime.invalid>" CACHE STRING
  "The Debian package's Maintainer field")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "sportsbook engine: bets over WebSocket, settlement and exact balances on PostgreSQL")
# The extended description, a line per argument; CPack puts the summary above it.
string(JOIN "\n" CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "Fulltime takes bets over WebSocket while it settles finished markets, and keeps"
  "every balance exact while settlement runs behind. It runs on PostgreSQL 15: a"
  "server given in /etc/fulltime/fulltime.json, or, with none, a private cluster it"
  "starts itself in /var/lib/fulltime (from postgresql-15)."
  "."
  "The package installs the engine, its configuration and a systemd unit"
  "(fulltime.service), enabled but not started: configure the database, then"
  "`systemctl start fulltime`.")
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
# fulltime_<version>_amd64.deb
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Runtime libraries only, computed by dpkg-shlibdeps from the binary's NEEDED entries (today
# libc6, libcaf-core0.17, libgcc-s1, libpq5, libssl3, libstdc++6; Boost.System and caf_io are
# linked but nothing of theirs is used, so the linker leaves them out): never a -dev package.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The private cluster (no database.url) runs PostgreSQL 15's initdb, pg_ctl and postgres.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "postgresql-15")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "pgbouncer")
# The binary is built RelWithDebInfo: 190 MB with its debug information, 6 MB stripped. The
# package ships it stripped; the build directory keeps the other, with the same build ID, for
# reading a core file from the field.
set(CPACK_STRIP_FILES ON)
# gzip, not xz: 2.4 MB instead of 1.7 MB, but the package takes 5 s instead of 9 on an idle
# two-core machine (xz alone was over a minute while the machine compiled), and
# tests/e2e/test_package.py makes it on every test run.
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${FULLTIME_PACKAGING_DIR}/debian/conffiles
  ${FULLTIME_PACKAGING_DIR}/debian/postinst
  ${FULLTIME_PACKAGING_DIR}/debian/prerm
  ${FULLTIME_PACKAGING_DIR}/debian/postrm)
# Maintainer scripts 0755 and conffiles 0644 in the package whatever their mode in the checkout.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# `cpack --config CPackSourceConfig.cmake`: the sources without build trees and local state.
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build/" "/build-[^/]*/" "/var/" "/\\\\.cache/"
  "__pycache__")

include(CPack)
