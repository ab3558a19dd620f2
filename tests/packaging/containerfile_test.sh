#!/usr/bin/env bash
# packaging/Containerfile, checked without a container engine (none runs here):
#   - the runtime stage installs exactly the Debian packages that own the libraries
#     `ldd koordlet` resolves (a negative control proves the comparison can fail);
#   - every runtime package exists in Debian's archive (apt-cache);
#   - stages, base images, the build commands, COPY --from, ENTRYPOINT/CMD, EXPOSE, labels
#     agree with each other and with the repo; CMD's flags pass the agent's own parser;
#   - .dockerignore keeps the repo's build trees and .git out of the context.
# The host must be Debian 12 as the image is: ldd's libraries are then the image's.
source "$(dirname "$0")/../e2e/lib.sh"
BIN=$(readlink -f "${1:?usage: containerfile_test.sh path/to/koordlet}")
REPO=$(cd "$(dirname "$0")/../.." && pwd)
CF=$REPO/packaging/Containerfile

for tool in ldd dpkg dpkg-query apt-cache; do
  command -v "$tool" >/dev/null || skip "$tool not found: this check needs a Debian host"
done
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ "$codename" = bookworm ] ||
  skip "host is '$codename', not Debian 12 (bookworm): ldd's libraries would not be the image's"

# --- the runtime package list ---------------------------------------------------------

# ldd_paths, owner_of, binary_packages, containerfile_packages: shared with make image.
# shellcheck source=../../packaging/image/runtime-packages.sh
source "$REPO/packaging/image/runtime-packages.sh"

# Compares file $1's runtime list with the owners of BIN's libraries; prints the
# difference and returns 1 when they differ.
compare_packages() {
  local got
  got=$(containerfile_packages "$1")
  [ -n "$got" ] || { echo "no runtime package list between the markers of $1"; return 1; }
  [ "$got" = "$WANT" ] && return 0
  comm -23 <(echo "$WANT") <(echo "$got") | sed 's/^/  missing: /'
  comm -13 <(echo "$WANT") <(echo "$got") | sed 's/^/  extra:   /'
  return 1
}

WANT=$(binary_packages "$BIN") || fail "cannot map the libraries of $BIN to packages (above)"
echo "ldd $BIN resolves libraries of: $(tr "\n" " " <<<"$WANT")"
for p in libc6 libssl3 libstdc++6; do
  grep -qx "$p" <<<"$WANT" || fail "ldd-derived list lacks $p: the mapping is broken ($WANT)"
done
compare_packages "$CF" || fail "the runtime stage's packages differ from the binary's (above)"

# Negative controls: the same comparison must notice one package fewer and one too many.
sed '/^      libssl3 \\$/d' "$CF" >"$WORK/minus.Containerfile"
cmp -s "$CF" "$WORK/minus.Containerfile" && fail "negative control: libssl3 line not found to remove"
compare_packages "$WORK/minus.Containerfile" >"$WORK/minus.out" &&
  fail "negative control: a list without libssl3 compared equal"
grep -q 'missing: libssl3' "$WORK/minus.out" || fail "negative control: libssl3 not reported missing"
sed 's/^      zlib1g \\$/      zlib1g \\\n      curl \\/' "$CF" >"$WORK/plus.Containerfile"
compare_packages "$WORK/plus.Containerfile" >"$WORK/plus.out" &&
  fail "negative control: a list with curl added compared equal"
grep -q 'extra: *curl' "$WORK/plus.out" || fail "negative control: curl not reported extra"

# Each runtime package is one Debian knows (not a typo apt would reject at build time).
for p in $(containerfile_packages "$CF"); do
  apt-cache show "$p" >/dev/null 2>&1 || fail "apt-cache knows no package '$p'"
done
# The install step: no recommends, apt lists dropped in the same layer.
block=$(awk '/^# runtime-packages: begin/ { on = 1; next } /^# runtime-packages: end/ { on = 0 } on' "$CF")
grep -q 'apt-get install -y --no-install-recommends' <<<"$block" || fail "runtime install lacks --no-install-recommends"
grep -q 'rm -rf /var/lib/apt/lists/\*' <<<"$block" || fail "runtime install keeps apt lists"

# --- structure ------------------------------------------------------------------------
# Instructions with continuation lines joined, comments dropped: "LINE<TAB>INSTRUCTION".
awk '/^[[:space:]]*#/ { next }
     { line = line (line == "" ? "" : " ") $0 }
     /\\$/ { sub(/\\$/, "", line); next }
     { if (line ~ /[^[:space:]]/) print line; line = "" }' "$CF" | sed 's/[[:space:]]\+/ /g' >"$WORK/instr"

mapfile -t FROMS < <(grep -E '^FROM ' "$WORK/instr")
[ ${#FROMS[@]} = 2 ] || fail "expected 2 stages (build, runtime), found ${#FROMS[@]}"
bookworm='^(docker\.io/(library/)?)?debian:(12|bookworm)'
[[ "${FROMS[0]}" =~ ^FROM\ ([^ ]+)\ AS\ build$ ]] || fail "first stage is not 'FROM <image> AS build': ${FROMS[0]}"
[[ "${BASH_REMATCH[1]}" =~ $bookworm(@sha256:[0-9a-f]{64})?$ ]] || fail "build stage base is not Debian 12: ${FROMS[0]}"
[[ "${FROMS[1]}" =~ ^FROM\ ([^ ]+)( AS [A-Za-z0-9_.-]+)?$ ]] || fail "bad runtime FROM: ${FROMS[1]}"
[[ "${BASH_REMATCH[1]}" =~ $bookworm-slim(@sha256:[0-9a-f]{64})?$ ]] ||
  fail "runtime stage base is not Debian 12 slim: ${FROMS[1]}"

# Split into stages.
awk '/^FROM / { n++ } { print > (dir "/stage" n) }' dir="$WORK" "$WORK/instr"
BUILD_STAGE=$WORK/stage1
RUN_STAGE=$WORK/stage2

# Build stage: the toolchain from install-deps.sh --build-only (copied in before it
# runs), a release meson build of the agent target only, stripped.
workdir=$(sed -n 's/^WORKDIR //p' "$BUILD_STAGE" | tail -n1)
[[ "$workdir" == /* ]] || fail "build stage has no absolute WORKDIR"
grep -q -- '--build-only' "$REPO/packaging/install-deps.sh" || fail "install-deps.sh has no --build-only mode"
n_copy=$(grep -n '^COPY .*packaging/install-deps.sh' "$BUILD_STAGE" | head -n1 | cut -d: -f1 || true)
n_run=$(grep -n '^RUN .*\./packaging/install-deps\.sh --build-only' "$BUILD_STAGE" | head -n1 | cut -d: -f1 || true)
[ -n "$n_run" ] || fail "build stage does not run ./packaging/install-deps.sh --build-only"
if [ -z "$n_copy" ] || [ "$n_copy" -gt "$n_run" ]; then
  fail "install-deps.sh is not copied in before it runs"
fi
grep -q '^COPY \. \.$' "$BUILD_STAGE" || fail "build stage does not copy the repo (COPY . .)"
build_run=$(grep '^RUN ' "$BUILD_STAGE" | grep 'meson setup') || fail "build stage has no meson setup"
for part in 'meson setup build' '--buildtype=release' '-Doptimization=2' 'ninja -C build agent/koordlet' \
  'strip --strip-unneeded build/agent/koordlet'; do
  grep -qF -- "$part" <<<"$build_run" || fail "build stage's RUN lacks '$part'"
done
# Where that puts the binary: meson mirrors the source tree, which BIN's own path shows.
[[ "$BIN" == */agent/koordlet ]] || fail "the built binary is not at <build>/agent/koordlet: $BIN"
produced="$workdir/build/agent/koordlet"

# COPY --from names an earlier stage and the path it produced; ENTRYPOINT runs the copy.
mapfile -t FROM_COPIES < <(grep -E '^COPY --from=' "$WORK/instr")
[ ${#FROM_COPIES[@]} = 1 ] || fail "expected one COPY --from, found ${#FROM_COPIES[@]}"
grep -qE '^COPY --from=' "$RUN_STAGE" || fail "COPY --from is not in the runtime stage"
[[ "${FROM_COPIES[0]}" =~ ^COPY\ --from=([^ ]+)\ ([^ ]+)\ ([^ ]+)$ ]] || fail "bad COPY: ${FROM_COPIES[0]}"
[ "${BASH_REMATCH[1]}" = build ] || fail "COPY --from=${BASH_REMATCH[1]} names no stage before it"
[ "${BASH_REMATCH[2]}" = "$produced" ] || fail "COPY --from=build copies ${BASH_REMATCH[2]}, the build makes $produced"
installed=${BASH_REMATCH[3]}

# Exec-form JSON array of plain strings: prints one element a line.
json_array() {
  [[ "$1" =~ ^\[\ *\"[^\"\\]*\"(\ *,\ *\"[^\"\\]*\")*\ *\]$ ]] || return 1
  grep -oE '"[^"]*"' <<<"$1" | sed 's/^"//; s/"$//'
}
entry=$(sed -n 's/^ENTRYPOINT //p' "$RUN_STAGE")
mapfile -t ENTRY < <(json_array "$entry") || true
[ ${#ENTRY[@]} -ge 1 ] || fail "ENTRYPOINT is not an exec-form JSON array: $entry"
[ "${ENTRY[0]}" = "$installed" ] || fail "ENTRYPOINT runs ${ENTRY[0]}, the binary is copied to $installed"
cmd=$(sed -n 's/^CMD //p' "$RUN_STAGE")
mapfile -t CMD < <(json_array "$cmd") || true
[ ${#CMD[@]} -ge 1 ] || fail "CMD is not an exec-form JSON array: $cmd"

# CMD's flags through the agent's parser; a file the image gets by COPY is read from
# its source in the repo.
args=()
for a in "${ENTRY[@]:1}" "${CMD[@]}"; do
  while read -r src dst; do
    [[ "$a" == *"=$dst" ]] && a="${a%=*}=$REPO/$src"
  done < <(sed -n 's/^COPY \([^-][^ ]*\) \([^ ]*\)$/\1 \2/p' "$RUN_STAGE")
  args+=("$a")
done
"$BIN" --check "${args[@]}" >"$WORK/check.out" 2>&1 ||
  { cat "$WORK/check.out" >&2; fail "the image's default flags fail koordlet --check: ${args[*]}"; }
echo "default args pass --check: ${CMD[*]}"

# The exposed port is the one CMD listens on.
port=$(printf '%s\n' "${CMD[@]}" | sed -n 's/^--\{0,2\}addr=.*:\([0-9]*\)$/\1/p')
[ -n "$port" ] || fail "CMD sets no --addr port"
grep -qx "EXPOSE $port" "$RUN_STAGE" || fail "EXPOSE does not name CMD's port $port"

# OCI labels; version and license as meson.build states them.
version=$(sed -n "s/^[[:space:]]*version[[:space:]]*:[[:space:]]*'\([^']*\)'.*/\1/p" "$REPO/meson.build" | head -n1)
license=$(sed -n "s/^[[:space:]]*license[[:space:]]*:[[:space:]]*'\([^']*\)'.*/\1/p" "$REPO/meson.build" | head -n1)
labels=$(grep '^LABEL ' "$RUN_STAGE") || fail "runtime stage has no LABEL"
for l in title description version licenses; do
  grep -q "org\.opencontainers\.image\.$l=" <<<"$labels" || fail "label org.opencontainers.image.$l missing"
done
grep -q "org\.opencontainers\.image\.licenses=\"$license\"" <<<"$labels" || fail "licenses label is not $license"
grep -qx "ARG VERSION=$version" "$RUN_STAGE" || fail "ARG VERSION's default is not meson's $version"

# .dockerignore: .git and every meson build tree in the repo stay out of the context.
IGN=$REPO/.dockerignore
[ -f "$IGN" ] || fail "no .dockerignore at the repo root"
ignored() {
  local pat
  while read -r pat; do
    pat=${pat%/}
    [ -z "$pat" ] || [[ "$pat" == \#* ]] && continue
    # shellcheck disable=SC2053
    [[ "$1" == $pat ]] && return 0
  done <"$IGN"
  return 1
}
ignored .git || fail ".dockerignore does not exclude .git"
for d in build build-asan; do ignored "$d" || fail ".dockerignore does not exclude $d/"; done
for f in "$REPO"/*/build.ninja; do
  [ -e "$f" ] || continue
  d=$(basename "$(dirname "$f")")
  ignored "$d" || fail ".dockerignore does not exclude the build tree $d/"
done
ignored meson.build && fail ".dockerignore excludes meson.build"
ignored agent && fail ".dockerignore excludes agent/"
echo "containerfile_test: runtime packages match ldd; structure checks pass"
