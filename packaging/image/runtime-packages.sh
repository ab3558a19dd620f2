# The image's runtime packages, sourced by packaging/image/build-image.sh (make image)
# and tests/packaging/containerfile_test.sh, so both read the list one way.
#
# The list itself is written once, in packaging/Containerfile between the
# "# runtime-packages: begin/end" markers (the docker build installs it with apt-get);
# make image extracts the same packages' .debs. Both callers compare it with
# binary_packages: the Debian packages owning every library `ldd` resolves for the
# agent. Functions print a reason on stderr and return non-zero on error.

# Paths of the libraries the dynamic loader resolves for $1, the loader included. The
# vDSO line has no path (it is the kernel's) and is skipped; "not found" is an error.
ldd_paths() {
  local out
  out=$(ldd "$1") || { echo "ldd $1 failed" >&2; return 1; }
  if grep -q 'not found' <<<"$out"; then
    echo "$out" >&2
    echo "ldd: a library of $1 is missing" >&2
    return 1
  fi
  awk '$2 == "=>" && $3 ~ /^\// { print $3; next } $1 ~ /^\// { print $1 }' <<<"$out"
}

# The package owning library path $1. On merged-/usr systems a path may be registered in
# dpkg's database under /lib or /usr/lib, and ldd may print either, or a symlink whose
# target is the registered name: try the path and its target, each under both prefixes.
owner_of() {
  local path=$1 real cand alias out
  real=$(readlink -f "$path")
  for cand in "$path" "$real"; do
    for alias in "$cand" "${cand/#\/usr\/lib\//\/lib\/}" "${cand/#\/lib\//\/usr\/lib\/}" \
      "${cand/#\/usr\/lib64\//\/lib64\/}" "${cand/#\/lib64\//\/usr\/lib64\/}"; do
      # "pkg:arch: /path" (or "a, b: /path" for a shared path: take each).
      if out=$(dpkg-query -S "$alias" 2>/dev/null); then
        sed -n 's/^\(.*\): \/.*$/\1/p' <<<"$out" | tr ',' '\n' | sed 's/^ *//; s/:.*$//'
        return 0
      fi
    done
  done
  echo "no Debian package owns $path (nor $real)" >&2
  return 1
}

# The packages owning the libraries of binary $1, sorted, one a line.
binary_packages() {
  local paths p
  paths=$(ldd_paths "$1") || return 1
  for p in $paths; do owner_of "$p" || return 1; done | sort -u
}

# Package names between the markers of Containerfile $1, sorted, one a line: the words
# after --no-install-recommends up to the next &&.
containerfile_packages() {
  awk '/^# runtime-packages: begin/ { on = 1; next } /^# runtime-packages: end/ { on = 0 } on' "$1" |
    sed 's/\\$//' | tr -s ' \t' '\n' |
    awk '$0 == "--no-install-recommends" { take = 1; next } $0 == "&&" { take = 0 } take && NF' |
    sort -u
}
