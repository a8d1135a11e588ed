file(REMOVE_RECURSE
  "libwombatkv_blake3.a"
)
