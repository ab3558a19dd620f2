#!/bin/bash
# Runs the fuzz targets of a build (meson's fuzz/ build dir holds fuzz_* and nri_seeds).
#   fuzz.sh inputs <source root> <fuzz build dir>
#       every target's entry point once over its seeds (whole captures included) and
#       its regression inputs (tests/fuzz/regressions/<target>/): the fuzz-inputs test,
#       in the libFuzzer build and in the plain build (replay main) alike.
#   fuzz.sh run <source root> <fuzz build dir> <seconds per target>
#       libFuzzer on each target for that long, the corpus kept in
#       <fuzz build dir>/corpus/<target>; prints execs/s and corpus size per target.
#       `make fuzz` (FUZZ_SECONDS each).
#   fuzz.sh brief <source root> <fuzz build dir> <seconds per target>
#       the same from the seeds alone, in a corpus thrown away after: the fuzz-brief
#       test (3 s each), which must not slow down as the kept corpus grows.
# Fails when a target crashes, leaks or hits undefined behaviour; its input is left in
# <fuzz build dir>/artifacts/ (keep it under tests/fuzz/regressions/<target>/ once fixed).
set -euo pipefail
mode=$1 src=$(cd "$2" && pwd) dir=$(cd "$3" && pwd)
seconds=${4:-60}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

targets=()
for t in "$dir"/fuzz_*; do
  [[ -x $t && -f $t ]] && targets+=("$t")
done
((${#targets[@]} > 0)) || { echo "fuzz.sh: no fuzz_* targets in $dir" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/koordlet-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/nri"
"$dir/nri_seeds" "$work/nri"
seed_args=("$src" "$work/seeds" "$work/nri")
[[ $mode == inputs ]] && seed_args=(--replay "${seed_args[@]}")
python3 "$src/fuzz/seeds.py" "${seed_args[@]}" >/dev/null

status=0
case $mode in
  inputs)
    for t in "${targets[@]}"; do
      name=$(basename "$t")
      dirs=("$work/seeds/$name")
      reg="$src/tests/fuzz/regressions/$name"
      [[ -d $reg ]] && dirs+=("$reg")
      n=$(find "${dirs[@]}" -type f | wc -l)
      mkdir -p "$work/out/$name"
      if "$t" -runs=0 -max_len=1048576 "$work/out/$name" "${dirs[@]}" >"$work/$name.log" 2>&1; then
        echo "fuzz-inputs: $name: $n inputs ok"
      else
        echo "fuzz-inputs: $name FAILED over $n inputs:"
        tail -40 "$work/$name.log"
        status=1
      fi
    done
    ;;
  run | brief)
    mkdir -p "$dir/artifacts"
    printf '%-20s %10s %10s %8s %10s %6s\n' target execs execs/s corpus bytes cov
    for t in "${targets[@]}"; do
      name=$(basename "$t")
      corpus="$dir/corpus/$name"
      [[ $mode == brief ]] && corpus="$work/corpus/$name"
      mkdir -p "$corpus"
      dirs=("$work/seeds/$name")
      reg="$src/tests/fuzz/regressions/$name"
      [[ -d $reg ]] && dirs+=("$reg")
      log="$dir/$name.log"
      if ! "$t" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
           -print_final_stats=1 -artifact_prefix="$dir/artifacts/$name-" \
           "$corpus" "${dirs[@]}" >"$log" 2>&1; then
        echo "fuzz: $name FAILED (log $log, input in $dir/artifacts/):"
        grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -20
        status=1
        continue
      fi
      # "#N DONE cov: C ft: F corp: U/Sb ... exec/s: E rss: R"
      done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
      execs=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$done_line")
      rate=$(sed -nE 's/.*exec\/s: ([0-9]+).*/\1/p' <<<"$done_line")
      corp=$(sed -nE 's/.*corp: ([0-9]+)\/([0-9]+[a-zA-Z]*).*/\1 \2/p' <<<"$done_line")
      cov=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$done_line")
      printf '%-20s %10s %10s %8s %10s %6s\n' "$name" "${execs:-?}" "${rate:-?}" \
        "${corp% *}" "${corp#* }" "${cov:-?}"
    done
    ;;
  *)
    echo "usage: fuzz.sh inputs|run|brief <source root> <fuzz build dir> [seconds]" >&2
    exit 2
    ;;
esac
exit $status
