# Run at build time (cmake -P) by the corral_build_info target: fills build_info.cc.in with
# the current git commit and the build's options. configure_file rewrites OUT only when
# its content changes.
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
  OUTPUT_VARIABLE CORRAL_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
  RESULT_VARIABLE git_result)
if(NOT git_result EQUAL 0 OR CORRAL_COMMIT STREQUAL "")
  set(CORRAL_COMMIT "unknown")
endif()
foreach(flag SANITIZE STATIC_DEPS)
  if(CORRAL_${flag})
    set(CORRAL_${flag}_BOOL true)
  else()
    set(CORRAL_${flag}_BOOL false)
  endif()
endforeach()
configure_file("${IN}" "${OUT}" @ONLY)
