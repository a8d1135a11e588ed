
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  "ASM"
  )
# The set of files for implicit dependencies of each language:
set(CMAKE_DEPENDS_CHECK_ASM
  "/usr/share/cargo/registry/blake3-1.3.1/c/blake3_avx2_x86-64_unix.S" "/work/main/build/CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_avx2_x86-64_unix.S.o"
  "/usr/share/cargo/registry/blake3-1.3.1/c/blake3_avx512_x86-64_unix.S" "/work/main/build/CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_avx512_x86-64_unix.S.o"
  "/usr/share/cargo/registry/blake3-1.3.1/c/blake3_sse2_x86-64_unix.S" "/work/main/build/CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_sse2_x86-64_unix.S.o"
  "/usr/share/cargo/registry/blake3-1.3.1/c/blake3_sse41_x86-64_unix.S" "/work/main/build/CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_sse41_x86-64_unix.S.o"
  )
set(CMAKE_ASM_COMPILER_ID "GNU")

# The include file search paths:
set(CMAKE_ASM_TARGET_INCLUDE_PATH
  "/usr/share/cargo/registry/blake3-1.3.1/c"
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/usr/share/cargo/registry/blake3-1.3.1/c/blake3.c" "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3.c.o" "gcc" "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3.c.o.d"
  "/usr/share/cargo/registry/blake3-1.3.1/c/blake3_dispatch.c" "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_dispatch.c.o" "gcc" "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_dispatch.c.o.d"
  "/usr/share/cargo/registry/blake3-1.3.1/c/blake3_portable.c" "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_portable.c.o" "gcc" "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_portable.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
