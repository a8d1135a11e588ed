# Every third-party dependency comes from a Debian package installed by scripts/setup.sh.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(RocksDB REQUIRED CONFIG)
find_package(zstd REQUIRED CONFIG)
find_package(spdlog REQUIRED CONFIG)
# Hash tables of the indexes that grow with the store (flat, open addressing).
find_package(absl REQUIRED CONFIG)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
find_path(NLOHMANN_JSON_INCLUDE_DIR nlohmann/json.hpp REQUIRED)
# wombatkvd's /healthz, /readyz and /metrics endpoint (src/daemon/http_endpoint.cc).
pkg_check_modules(CPPHTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# wombatkvd's allocator (docs/daemon.md, "Allocator"); the sanitizers bring their own.
if(WOMBATKV_JEMALLOC AND NOT WOMBATKV_ASAN AND NOT WOMBATKV_TSAN)
  pkg_check_modules(JEMALLOC REQUIRED IMPORTED_TARGET jemalloc)
endif()
if(WOMBATKV_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(WOMBATKV_BENCH)
  find_package(benchmark REQUIRED)
endif()

# BLAKE3: Debian's librust-blake3-dev ships the official C sources with x86-64 SIMD assembly.
# We build them here as a static library; nothing is copied into the repository.
file(GLOB WOMBATKV_BLAKE3_DIRS /usr/share/cargo/registry/blake3-*/c)
list(SORT WOMBATKV_BLAKE3_DIRS)
list(POP_BACK WOMBATKV_BLAKE3_DIRS BLAKE3_C_DIR)
if(NOT EXISTS "${BLAKE3_C_DIR}/blake3.h")
  message(FATAL_ERROR "BLAKE3 C sources not found; run scripts/setup.sh (installs librust-blake3-dev)")
endif()
message(STATUS "BLAKE3 C sources: ${BLAKE3_C_DIR}")
add_library(wombatkv_blake3 STATIC
  ${BLAKE3_C_DIR}/blake3.c
  ${BLAKE3_C_DIR}/blake3_dispatch.c
  ${BLAKE3_C_DIR}/blake3_portable.c
  ${BLAKE3_C_DIR}/blake3_sse2_x86-64_unix.S
  ${BLAKE3_C_DIR}/blake3_sse41_x86-64_unix.S
  ${BLAKE3_C_DIR}/blake3_avx2_x86-64_unix.S
  ${BLAKE3_C_DIR}/blake3_avx512_x86-64_unix.S)
target_include_directories(wombatkv_blake3 SYSTEM PUBLIC ${BLAKE3_C_DIR})
set_target_properties(wombatkv_blake3 PROPERTIES C_VISIBILITY_PRESET hidden)

# S3 L2 (src/object/s3/): libcurl with its AWS SigV4 signing, pugixml for S3's XML, and OpenSSL's
# libcrypto for the payload SHA-256 (x-amz-content-sha256) and Content-MD5.
find_package(CURL REQUIRED)
pkg_check_modules(PUGIXML REQUIRED IMPORTED_TARGET pugixml)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
