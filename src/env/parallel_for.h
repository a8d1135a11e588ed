// ParallelFor: calls fn(i) for each i in [0, n) once, on the calling thread and on up to `helpers`
// tasks of an executor at once — for independent calls that mostly wait (round trips to L2).
//
// Work-sharing: the caller takes indexes too, and waits only for the ones a task has started. A
// busy executor, or an inline one (the simulator's), makes it serial; it can never wait for a
// task that has not begun. A task that starts after every index is taken returns at once and
// touches nothing of the caller's.
#pragma once

#include <cstddef>
#include <functional>

#include "wombatkv/env.h"

namespace wombatkv {

// Returns after every fn(i) has returned. `fn` must be safe to call concurrently.
Status ParallelFor(Executor* executor, size_t n, size_t helpers,
                   const std::function<void(size_t)>& fn);

}  // namespace wombatkv
