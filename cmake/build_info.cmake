# Writes build_info.hpp with the git commit of the source tree (or $ROOFLAB_GIT_COMMIT when the
# tree is a copy without git). Rewrites the file only when its content changes, so a build after
# an unchanged commit recompiles nothing. safe.directory: a copied tree may belong to another
# user, and git refuses to read such a repository otherwise.
set(commit "$ENV{ROOFLAB_GIT_COMMIT}")
if(commit STREQUAL "")
  execute_process(COMMAND git -c safe.directory=* rev-parse --short=12 HEAD WORKING_DIRECTORY "${SOURCE_DIR}"
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE git_failed ERROR_QUIET)
  if(git_failed OR commit STREQUAL "")
    set(commit "unknown")
  else()
    execute_process(COMMAND git -c safe.directory=* status --porcelain --untracked-files=no
                    WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE changes ERROR_QUIET)
    if(NOT changes STREQUAL "")
      string(APPEND commit "+dirty")
    endif()
  endif()
endif()
set(content "#pragma once\n#define ROOFLAB_GIT_COMMIT \"${commit}\"\n#define ROOFLAB_VERSION \"${VERSION}\"\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" previous)
endif()
if(NOT previous STREQUAL content)
  file(WRITE "${OUTPUT}" "${content}")
endif()
