
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/env/executors.cc" "src/env/CMakeFiles/wombatkv_env.dir/executors.cc.o" "gcc" "src/env/CMakeFiles/wombatkv_env.dir/executors.cc.o.d"
  "/work/main/src/env/posix_env.cc" "src/env/CMakeFiles/wombatkv_env.dir/posix_env.cc.o" "gcc" "src/env/CMakeFiles/wombatkv_env.dir/posix_env.cc.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build/src/base/CMakeFiles/wombatkv_base.dir/DependInfo.cmake"
  "/work/main/build/CMakeFiles/wombatkv_blake3.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
