file(REMOVE_RECURSE
  "CMakeFiles/wombatkv_env.dir/executors.cc.o"
  "CMakeFiles/wombatkv_env.dir/executors.cc.o.d"
  "CMakeFiles/wombatkv_env.dir/posix_env.cc.o"
  "CMakeFiles/wombatkv_env.dir/posix_env.cc.o.d"
  "libwombatkv_env.a"
  "libwombatkv_env.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/wombatkv_env.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
