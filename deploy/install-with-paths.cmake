# Run by `cmake --install` (install(CODE) in the root CMakeLists.txt): copies
# the deployment files that name installed paths (the systemd units, the
# Slurm batch script), with the default prefix's paths in them
# (/usr/local/bin, /usr/local/share) rewritten to where this install put
# the binaries and data, so that the files run as installed whatever
# --prefix was.
#
# Set by the caller: TESSERA_SOURCE_DIR, TESSERA_BINDIR, TESSERA_DATADIR
# (relative to the prefix or absolute), and TESSERA_INSTALL_ITEMS, a list of
# "source-relative-file|destination-folder|mode" (destination relative to
# the prefix or absolute; mode: FILE or PROGRAM).
foreach(var TESSERA_SOURCE_DIR TESSERA_BINDIR TESSERA_DATADIR TESSERA_INSTALL_ITEMS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install-with-paths.cmake: ${var} is not set")
  endif()
endforeach()

function(tessera_under_prefix out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
  endif()
endfunction()

tessera_under_prefix(bindir "${TESSERA_BINDIR}")
tessera_under_prefix(datadir "${TESSERA_DATADIR}")
foreach(item IN LISTS TESSERA_INSTALL_ITEMS)
  string(REPLACE "|" ";" parts "${item}")
  list(GET parts 0 source)
  list(GET parts 1 destination)
  list(GET parts 2 mode)
  tessera_under_prefix(destination "${destination}")
  get_filename_component(name "${source}" NAME)
  file(READ "${TESSERA_SOURCE_DIR}/${source}" text)
  # "/usr/local/bin" as a whole path or the start of one.
  string(REGEX REPLACE "/usr/local/bin([^A-Za-z0-9_.-]|$)" "${bindir}\\1"
         text "${text}")
  string(REGEX REPLACE "/usr/local/share([^A-Za-z0-9_.-]|$)" "${datadir}\\1"
         text "${text}")
  # DESTDIR as install() honours it: in front of the absolute destination.
  set(installed "$ENV{DESTDIR}${destination}/${name}")
  message(STATUS "Installing: ${installed}")
  file(WRITE "${installed}" "${text}")
  if(mode STREQUAL "PROGRAM")
    file(CHMOD "${installed}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
         GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  else()
    file(CHMOD "${installed}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ
         WORLD_READ)
  endif()
  # Listed in install_manifest.txt like the files install() copies.
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${destination}/${name}")
endforeach()
