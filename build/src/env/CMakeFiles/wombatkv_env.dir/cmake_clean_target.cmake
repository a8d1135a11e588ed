file(REMOVE_RECURSE
  "libwombatkv_env.a"
)
