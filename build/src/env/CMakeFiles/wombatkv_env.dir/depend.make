# Empty dependencies file for wombatkv_env.
# This may be replaced when dependencies are built.
