
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/base/blake3_hash.cc" "src/base/CMakeFiles/wombatkv_base.dir/blake3_hash.cc.o" "gcc" "src/base/CMakeFiles/wombatkv_base.dir/blake3_hash.cc.o.d"
  "/work/main/src/base/check.cc" "src/base/CMakeFiles/wombatkv_base.dir/check.cc.o" "gcc" "src/base/CMakeFiles/wombatkv_base.dir/check.cc.o.d"
  "/work/main/src/base/crc32c.cc" "src/base/CMakeFiles/wombatkv_base.dir/crc32c.cc.o" "gcc" "src/base/CMakeFiles/wombatkv_base.dir/crc32c.cc.o.d"
  "/work/main/src/base/hex.cc" "src/base/CMakeFiles/wombatkv_base.dir/hex.cc.o" "gcc" "src/base/CMakeFiles/wombatkv_base.dir/hex.cc.o.d"
  "/work/main/src/base/status.cc" "src/base/CMakeFiles/wombatkv_base.dir/status.cc.o" "gcc" "src/base/CMakeFiles/wombatkv_base.dir/status.cc.o.d"
  "/work/main/src/base/types.cc" "src/base/CMakeFiles/wombatkv_base.dir/types.cc.o" "gcc" "src/base/CMakeFiles/wombatkv_base.dir/types.cc.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build/CMakeFiles/wombatkv_blake3.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
