#!/usr/bin/env bash
# tidy_test.sh REPO_ROOT — keeps the environment seam honest (STYLE.md, "all nondeterminism enters
# through one seam"; after TigerBeetle's tidy.zig).
#
# Outside src/env/, C and C++ files under src/, tools/ and sim/ must not read the real clock,
# sleep, or draw OS randomness directly; they take a Clock / Random / Executor from env.h instead.
# Any such call makes the deterministic simulator lie, so it fails this test with file:line.
#
# Text after `//` and single-line `/* ... */` comments, and continuation lines of block comments
# (" * ..."), are not checked, so prose may name the banned calls.
#
# The script first checks itself against a generated tree (every rule must fire, allowed places
# must stay quiet, an empty tree must fail), so a broken pattern cannot turn it into a no-op.
# Exit status: 0 clean, 1 violations (or nothing to check), 2 usage or self-check failure.
set -euo pipefail

# Word boundaries spelled for POSIX ERE (used by both grep -E and bash's =~).
readonly B='(^|[^A-Za-z0-9_])'
readonly E='([^A-Za-z0-9_]|$)'

# name|regex[|engine]. Each name says what to use instead. A rule marked `engine` does not apply
# to tests (*_test.cc, *_test.h): a test may bound its own wait for a hang with the real clock.
readonly RULES=(
  "std::chrono clock ::now (use Clock::NowMicros/WallMicros)|${B}[a-z_]*_clock[[:space:]]*::[[:space:]]*now${E}"
  "sleep_for/sleep_until (use Clock::SleepMicros or Clock::WaitFor)|${B}sleep_(for|until)${E}"
  "usleep/nanosleep (use Clock::SleepMicros)|${B}(usleep|nanosleep)[[:space:]]*\\("
  "sleep() (use Clock::SleepMicros)|${B}sleep[[:space:]]*\\("
  "std::random_device (use Random from env.h)|${B}random_device${E}"
  "rand()/srand() (use Random from env.h)|${B}s?rand[[:space:]]*\\("
  "getrandom/arc4random (use Random from env.h)|${B}(getrandom|arc4random[a-z_]*)${E}"
  "/dev/urandom (use Random from env.h)|\"/dev/u?random\""
  "time(nullptr) (use Clock::WallMicros)|${B}time[[:space:]]*\\([[:space:]]*(nullptr|NULL|0|&)"
  "gettimeofday (use Clock::WallMicros)|${B}gettimeofday${E}"
  "clock_gettime (use Clock::NowMicros)|${B}clock_gettime${E}"
  "absl clock or random (use Clock / Random from env.h)|${B}absl::(Now|SleepFor|GetCurrentTimeNanos|[A-Za-z]*BitGen)${E}"
  "timed wait on the real clock (use Clock::WaitFor)|(\\.|->)[[:space:]]*wait_(for|until)[[:space:]]*\\(|engine"
)

# The regex of a rule ("name|regex" or "name|regex|engine").
rule_regex() {
  local r=${1#*|}
  printf '%s' "${r%|engine}"
}

# Drops what is commented out on one line, so prose mentioning a banned call is not a violation.
strip_comments() {
  local code=$1
  if [[ $code =~ ^[[:space:]]*\*([[:space:]]|/|$) ]]; then
    printf ''
    return
  fi
  # Remove /* ... */ spans on this line, then anything after //.
  while [[ $code == *'/*'*'*/'* ]]; do
    local before=${code%%'/*'*}
    local rest=${code#*'/*'}
    code="${before} ${rest#*'*/'}"
  done
  [[ $code == *'/*'* ]] && code=${code%%'/*'*}
  code=${code%%//*}
  printf '%s' "$code"
}

# scan ROOT: prints violations as "path:line: banned ...: code" and returns 1 if there were any
# (or if there was nothing to scan), 0 otherwise.
scan() {
  local root=$1
  local dirs=() files=() d
  for d in src tools sim; do
    [[ -d "$root/$d" ]] && dirs+=("$d")
  done
  if ((${#dirs[@]} > 0)); then
    mapfile -d '' files < <(cd "$root" && find "${dirs[@]}" -path src/env -prune -o -type f \
      \( -name '*.c' -o -name '*.cc' -o -name '*.cpp' -o -name '*.cxx' -o -name '*.h' \
         -o -name '*.hh' -o -name '*.hpp' -o -name '*.hxx' -o -name '*.inc' -o -name '*.ipp' \) \
      -print0 | sort -z)
  fi
  if ((${#files[@]} == 0)); then
    echo "tidy: no C/C++ files found under src/, tools/ or sim/ of $root: refusing to pass" >&2
    return 1
  fi

  # One grep over every file finds candidate lines; each candidate is then stripped of comments
  # and matched rule by rule, so the report names the rule and ignores prose.
  local combined="" rule
  for rule in "${RULES[@]}"; do combined+="${combined:+|}($(rule_regex "$rule"))"; done
  local candidates rc=0
  candidates=$(cd "$root" && grep -nHE -e "$combined" -- "${files[@]}") || rc=$?
  if ((rc > 1)); then
    echo "tidy: grep failed (status $rc)" >&2
    return 1
  fi

  local violations=0 file line text code
  while IFS=: read -r file line text; do
    [[ -z $file ]] && continue
    code=$(strip_comments "$text")
    for rule in "${RULES[@]}"; do
      [[ $rule == *'|engine' && $file =~ _test\.(cc|h)$ ]] && continue
      if [[ $code =~ $(rule_regex "$rule") ]]; then
        echo "$file:$line: banned ${rule%%|*}: ${text#"${text%%[![:space:]]*}"}"
        violations=$((violations + 1))
      fi
    done
  done <<<"$candidates"

  if ((violations > 0)); then
    echo "tidy: $violations violation(s) in ${#files[@]} files; only src/env/ may touch the" \
      "real clock, sleep or OS randomness (see include/wombatkv/env.h)" >&2
    return 1
  fi
  echo "tidy: ${#files[@]} files clean"
  return 0
}

self_check() {
  local tmp
  tmp=$(mktemp -d)
  SELF_CHECK_DIR=$tmp  # removed by the EXIT trap, however we leave
  local fail=0

  # An empty tree must not pass.
  if scan "$tmp" >/dev/null 2>&1; then
    echo "tidy self-check: an empty tree passed" >&2
    fail=1
  fi

  mkdir -p "$tmp/src/x" "$tmp/src/env" "$tmp/tools" "$tmp/sim"
  # One violation per line; each rule fires at least once.
  cat >"$tmp/src/x/bad.cc" <<'CC'
auto a = std::chrono::steady_clock::now();
auto b = std::chrono::system_clock::now();
auto c = std::chrono::high_resolution_clock :: now();
std::this_thread::sleep_for(std::chrono::seconds(1));
std::this_thread::sleep_until(deadline);
std::random_device rd;
int d = rand();
srand(42);
int e = std::rand ();
usleep(10);
nanosleep(&ts, nullptr);
time_t f = time(nullptr);
time_t g = std::time(NULL);
gettimeofday(&tv, nullptr);
clock_gettime(CLOCK_MONOTONIC, &ts);
sleep(1);
getrandom(buf, 16, 0);
uint32_t r = arc4random_uniform(6);
int fd = open("/dev/urandom", O_RDONLY);
time_t now = time(&now);
auto t = absl::Now();
absl::BitGen gen;
cv.wait_for(lock, std::chrono::seconds(1));
done->wait_until(lock, deadline);
CC
  printf 'x = steady_clock::now();\n' >"$tmp/tools/bad.h"
  printf 'x = rand();\n' >"$tmp/sim/bad.cpp"
  # A test may bound a wait with the real clock; the other rules hold there too.
  printf 'cv.wait_for(lock, 1s);\nsleep(1);\n' >"$tmp/src/x/thing_test.cc"
  local expected=27
  # Allowed: the seam itself, comments, and look-alike identifiers.
  cp "$tmp/src/x/bad.cc" "$tmp/src/env/posix.cc"
  cat >"$tmp/src/x/good.cc" <<'CC'
// Never call std::this_thread::sleep_for or rand() here.
/* steady_clock::now() is banned */ int ok = 1;
/*
 * gettimeofday is banned too.
 */
uint64_t t = clock->NowMicros();  // not system_clock::now()
int h = Uniform(3) + operand(2) + grand(1) + random_devices + my_time(0);
bool i = mtime(nullptr) || sleep_forever;
int j = my_sleep(1) + Sleep(2) + getrandomish + clock->WaitFor(cv, lock, 5);
std::string k = "head -c 4096 /dev/urandom | wombatkv put";
CC
  printf 'int d = rand();\n' >"$tmp/src/x/notes.txt"  # not a C/C++ file

  local out
  out=$(scan "$tmp" 2>/dev/null) && {
    echo "tidy self-check: a tree full of violations passed" >&2
    fail=1
  }
  local got
  got=$(grep -c ': banned ' <<<"$out" || true)
  if [[ $got != "$expected" ]]; then
    echo "tidy self-check: expected $expected violations, got $got:" >&2
    echo "$out" >&2
    fail=1
  fi
  local n
  for n in $(seq 1 24); do
    grep -q "^src/x/bad.cc:$n: " <<<"$out" || {
      echo "tidy self-check: missed src/x/bad.cc line $n" >&2
      fail=1
    }
  done
  grep -q '^src/x/thing_test.cc:2: banned sleep()' <<<"$out" || {
    echo "tidy self-check: missed sleep() in a test" >&2
    fail=1
  }
  if grep -qE '^(src/env/|src/x/good\.cc|src/x/notes\.txt|src/x/thing_test\.cc:1:)' <<<"$out"; then
    echo "tidy self-check: flagged an allowed place:" >&2
    grep -E '^(src/env/|src/x/good\.cc|src/x/notes\.txt|src/x/thing_test\.cc:1:)' <<<"$out" >&2
    fail=1
  fi
  return $fail
}

SELF_CHECK_DIR=""
trap '[[ -n $SELF_CHECK_DIR ]] && rm -rf "$SELF_CHECK_DIR"' EXIT

main() {
  if (($# != 1)) || [[ ! -d $1 ]]; then
    echo "usage: $0 REPO_ROOT" >&2
    exit 2
  fi
  if ! self_check; then
    echo "tidy: self-check failed; the rules in this script are broken" >&2
    exit 2
  fi
  scan "$1" || exit 1
}

main "$@"
