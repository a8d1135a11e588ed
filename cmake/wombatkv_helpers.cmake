# One small helper per target kind. Every target gets the same warnings and sanitizers.

set(WOMBATKV_WARNINGS -Wall -Wextra -Werror -Wno-missing-field-initializers)
# GCC 12 (Debian 12's compiler) reports -Wrestrict on libstdc++'s own std::string code when it is
# inlined at -O3 (GCC bugs 105329 and 105651: "accessing 9223372036854775810 or more bytes"), which
# fails the Release build of the main job. Those reports are about the library, never our code.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  list(APPEND WOMBATKV_WARNINGS -Wno-restrict)
endif()

function(wombatkv_flags target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${WOMBATKV_WARNINGS}>)
  if(WOMBATKV_ASAN)
    # Under the sanitizers GCC 12 reports -Wmaybe-uninitialized inside libstdc++'s <regex>
    # (std::function in its NFA states) for three test files: the library's code, not ours, and
    # only with the sanitizers on.
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -Wno-maybe-uninitialized)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(WOMBATKV_TSAN)
    target_compile_options(${target} PRIVATE -fsanitize=thread)
    target_link_options(${target} PRIVATE -fsanitize=thread)
  endif()
endfunction()

# wombatkv_module(NAME SOURCES ... DEPS ...) — a static library for one layer of the engine.
function(wombatkv_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  set_target_properties(${name} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  wombatkv_flags(${name})
endfunction()

# wombatkv_test(NAME SOURCES ... DEPS ...) — a GoogleTest binary registered with CTest.
function(wombatkv_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT WOMBATKV_TESTS)
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  wombatkv_flags(${name})
  # The test drivers themselves are built for compile time, not speed: -O1 and line tables only
  # halve a test file's compile time (the code under test keeps its own flags; CONTRIBUTING.md).
  target_compile_options(${name} PRIVATE "$<$<CONFIG:RelWithDebInfo>:-O1;-g1>"
                                         "$<$<CONFIG:Release>:-O1>")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${ARG_LABELS}")
endfunction()

# wombatkv_tool(NAME SOURCES ... DEPS ...) — an installed executable.
function(wombatkv_tool name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  wombatkv_flags(${name})
  install(TARGETS ${name} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()

# wombatkv_bench(NAME SOURCES ... DEPS ...) — a benchmark binary (not run by tests).
function(wombatkv_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  wombatkv_flags(${name})
endfunction()

# While a module is being written its test files may not all exist yet: build the test from the
# ones that do. (Only missing files are skipped; a test that exists always builds and runs.)
function(wombatkv_optional_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  set(present)
  foreach(src ${ARG_SOURCES})
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${src})
      list(APPEND present ${src})
    endif()
  endforeach()
  if(present)
    wombatkv_test(${name} SOURCES ${present} DEPS ${ARG_DEPS} LABELS "${ARG_LABELS}")
  endif()
endfunction()
