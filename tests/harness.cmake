# tests/harness.cmake - the shared daemon test harness (tests/harness.h).
# Include from any tests/<module>/CMakeLists.txt that starts the real
# daemon; safe to include more than once.  Link `ho_test_harness`.
if(NOT TARGET ho_test_harness)
  add_library(ho_test_harness STATIC ${CMAKE_SOURCE_DIR}/tests/harness.c)
  target_link_libraries(ho_test_harness PUBLIC ho_proto)
  # Building a test that starts the daemon builds the daemon first.
  if(TARGET hyperoffloadd)
    add_dependencies(ho_test_harness hyperoffloadd)
  endif()
endif()
