# Empty compiler generated dependencies file for wombatkv_base.
# This may be replaced when dependencies are built.
