# Empty compiler generated dependencies file for wombatkv_blake3.
# This may be replaced when dependencies are built.
