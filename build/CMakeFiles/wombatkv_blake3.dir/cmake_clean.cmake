file(REMOVE_RECURSE
  "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3.c.o"
  "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3.c.o.d"
  "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_avx2_x86-64_unix.S.o"
  "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_avx512_x86-64_unix.S.o"
  "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_dispatch.c.o"
  "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_dispatch.c.o.d"
  "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_portable.c.o"
  "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_portable.c.o.d"
  "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_sse2_x86-64_unix.S.o"
  "CMakeFiles/wombatkv_blake3.dir/usr/share/cargo/registry/blake3-1.3.1/c/blake3_sse41_x86-64_unix.S.o"
  "libwombatkv_blake3.a"
  "libwombatkv_blake3.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang ASM C)
  include(CMakeFiles/wombatkv_blake3.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
