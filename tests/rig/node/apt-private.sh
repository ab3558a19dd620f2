# Sourced by fetch-rootfs.sh, fetch-node-kernel.sh (the rig's kernels too) and
# tests/runtime/fetch-runtime.sh: a private apt configuration, so
# nothing of the host's apt state is used or changed and nothing is installed.
#
#   private_apt <apt-dir> "<suite> <component>" ...
#
# writes <apt-dir>/apt.conf and exports APT_CONFIG to it. apt reads that file instead of
# /etc/apt/apt.conf; its Dir::Etc::* name our own sources list and EMPTY parts dirs (so
# the host's apt.conf.d, preferences and trusted keys are not read), its Dir::State,
# Dir::Cache and the dpkg status are ours too. The status file is empty: to apt, nothing
# is installed, so `apt-get install --download-only` fetches every dependency.
# A suite named "*-security" is taken from the security mirror. `apt-get update` runs
# only when the private lists are empty. Returns 77 when the archive is out of reach.
# shellcheck shell=bash
# shellcheck disable=SC2012  # ls of .deb globs: Debian file names have no odd characters

private_apt() {
  local apt=$1
  shift
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  local mirror=${KOORDLET_DEBIAN_MIRROR:-http://deb.debian.org/debian}
  [ -r "$keyring" ] || { echo "apt-private: no $keyring (debian-archive-keyring)" >&2; return 1; }
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/etc/apt.conf.d" \
    "$apt/etc/preferences.d" "$apt/etc/trusted.gpg.d" "$apt/state"
  : >"$apt/etc/sources.list"
  local entry
  for entry in "$@"; do
    case "$entry" in
      *-security*) echo "deb [signed-by=$keyring] ${mirror}-security $entry" >>"$apt/etc/sources.list" ;;
      *) echo "deb [signed-by=$keyring] $mirror $entry" >>"$apt/etc/sources.list" ;;
    esac
  done
  [ -e "$apt/status" ] || : >"$apt/status"
  cat >"$apt/apt.conf" <<EOF
Dir::Etc "$apt/etc";
Dir::Etc::sourcelist "sources.list";
Dir::Etc::sourceparts "/dev/null";
Dir::Etc::parts "apt.conf.d";
Dir::Etc::preferencesparts "preferences.d";
Dir::Etc::trustedparts "trusted.gpg.d";
Dir::State "$apt/state";
Dir::State::Lists "$apt/lists";
Dir::State::status "$apt/status";
Dir::Cache "$apt/cache";
Dir::Log "$apt/state";
Debug::NoLocking "1";
APT::Sandbox::User "root";
APT::Install-Recommends "0";
APT::Install-Suggests "0";
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
EOF
  # A mirror that is a frozen snapshot (this project's build VMs see one) serves a
  # Release past its Valid-Until: the signature still holds, only the freshness check
  # fails. It is accepted, loudly, once seen (remembered for later runs).
  [ -e "$apt/ignore-valid-until" ] && echo 'Acquire::Check-Valid-Until "false";' >>"$apt/apt.conf"
  export APT_CONFIG=$apt/apt.conf
  ls "$apt/lists/"*Packages* >/dev/null 2>&1 && return 0
  echo "apt-private: apt-get update (private lists in $apt)" >&2
  apt-get update -qq 2>"$apt/update.err" && return 0
  if ! grep -q "is expired" "$apt/update.err"; then
    cat "$apt/update.err" >&2
    echo "apt-private: apt-get update failed: the archive ($mirror) is out of reach" >&2
    return 77
  fi
  echo "apt-private: WARNING: a Release is past its Valid-Until (a frozen mirror?):" \
    "using it with Acquire::Check-Valid-Until=false ($(grep -m1 'is expired' "$apt/update.err"))" >&2
  touch "$apt/ignore-valid-until"
  echo 'Acquire::Check-Valid-Until "false";' >>"$apt/apt.conf"
  apt-get update -qq >&2 || { echo "apt-private: apt-get update failed" >&2; return 77; }
}

# The .deb files of one resolution, one path a line: apt-get --simulate against the same
# (empty) status prints "Inst <pkg> (<version> <suite> [arch])" for every package it
# would unpack; the cache may hold other versions too. apt's own downloads keep an
# epoch as %3a (libattr1_1%3a2.6.0-1_amd64.deb), `apt-get download` drops it.
resolved_debs() {
  local apt=$1 pkg version file
  shift
  apt-get install --simulate -q "$@" 2>/dev/null |
    sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*/\1 \2/p' | LC_ALL=C sort |
    while read -r pkg version; do
      file=$(ls "$apt/cache/archives/${pkg}_${version/:/%3a}_"*.deb \
                "$apt/cache/archives/${pkg}_${version#*:}_"*.deb 2>/dev/null | head -n 1 || true)
      [ -n "$file" ] || { echo "apt-private: no .deb for $pkg $version" >&2; return 1; }
      echo "$file"
    done
}
