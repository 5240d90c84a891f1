# ho_add_test(NAME <name> SOURCES <src...> [LIBS <lib...>] [LABELS <label...>]
#             [ENV <VAR=value...>] [TIMEOUT <s>] [NO_VALGRIND])
#
# Builds one check(3) test executable and registers it with CTest under
# its labels (e.g. "unit", "integration").  In a sanitizer build
# (HO_SANITIZE=ON) every test also carries the label "asan".  Unless
# NO_VALGRIND is given, a second test "<name>.valgrind" runs the same binary
# under valgrind with label "valgrind" (CK_FORK=no so valgrind sees the
# test bodies; HO_UNDER_VALGRIND=1 so integration tests can wrap the daemon).
function(ho_add_test)
  cmake_parse_arguments(T "NO_VALGRIND" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;ENV" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} PkgConfig::CHECK Threads::Threads)
  set(labels ${T_LABELS})
  if(HO_SANITIZE)
    list(APPEND labels asan)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(env "HO_BUILD_DIR=${CMAKE_BINARY_DIR}" "HO_SOURCE_DIR=${CMAKE_SOURCE_DIR}" ${T_ENV})
  if(HO_SANITIZE)
    # check(3) forks each test: keep leak checking but make reports fatal.
    list(APPEND env "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0"
                    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${labels}"
                       TIMEOUT ${T_TIMEOUT} ENVIRONMENT "${env}")
  if(NOT T_NO_VALGRIND AND NOT HO_SANITIZE)
    find_program(VALGRIND valgrind)
    if(VALGRIND)
      add_test(NAME ${T_NAME}.valgrind
               COMMAND ${VALGRIND} --error-exitcode=99 --leak-check=full
                       --errors-for-leak-kinds=definite --track-fds=no
                       --quiet $<TARGET_FILE:${T_NAME}>)
      math(EXPR vt "${T_TIMEOUT} * 10")
      set_tests_properties(${T_NAME}.valgrind PROPERTIES LABELS "valgrind"
                           TIMEOUT ${vt}
                           ENVIRONMENT "${env};CK_FORK=no;HO_UNDER_VALGRIND=1")
    endif()
  endif()
endfunction()
