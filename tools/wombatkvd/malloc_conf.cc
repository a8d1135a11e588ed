// jemalloc's built-in options for wombatkvd (linked only when wombatkvd is linked with jemalloc:
// docs/daemon.md, "Allocator"). jemalloc reads this string at start-up, before MALLOC_CONF from
// the environment, which overrides it (MALLOC_CONF=thp:default restores jemalloc's default).
//
// Transparent huge pages for the heap and jemalloc's metadata: the daemon's heap grows with the
// cache and the index (about 2.6 KB per 1 KiB block saved), and a page fault on the development
// VM costs several microseconds (an exit to the hypervisor). With 4 KiB pages eight clients'
// 1 KiB saves took about one fault each; with huge pages a tenth of that (BENCHMARKS.md, daemon
// part, "Session 28"). Kernels with THP off ignore the advice.
extern "C" {
// The name and type are jemalloc's interface (a definition here replaces the library's).
const char* malloc_conf = "thp:always,metadata_thp:always";
}
