file(REMOVE_RECURSE
  "CMakeFiles/wombatkv_base.dir/blake3_hash.cc.o"
  "CMakeFiles/wombatkv_base.dir/blake3_hash.cc.o.d"
  "CMakeFiles/wombatkv_base.dir/check.cc.o"
  "CMakeFiles/wombatkv_base.dir/check.cc.o.d"
  "CMakeFiles/wombatkv_base.dir/crc32c.cc.o"
  "CMakeFiles/wombatkv_base.dir/crc32c.cc.o.d"
  "CMakeFiles/wombatkv_base.dir/hex.cc.o"
  "CMakeFiles/wombatkv_base.dir/hex.cc.o.d"
  "CMakeFiles/wombatkv_base.dir/status.cc.o"
  "CMakeFiles/wombatkv_base.dir/status.cc.o.d"
  "CMakeFiles/wombatkv_base.dir/types.cc.o"
  "CMakeFiles/wombatkv_base.dir/types.cc.o.d"
  "libwombatkv_base.a"
  "libwombatkv_base.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/wombatkv_base.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
