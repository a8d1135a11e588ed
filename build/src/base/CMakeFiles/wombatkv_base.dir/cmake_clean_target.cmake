file(REMOVE_RECURSE
  "libwombatkv_base.a"
)
