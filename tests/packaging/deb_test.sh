#!/usr/bin/env bash
# make deb's package, end to end on this machine: build it from the given binary, check its
# metadata and files, install it, verify the installed unit, run the installed agent the
# way the unit does (plus --dry-run), then remove and purge it and check nothing is left.
# It installs into the real system (it must run as root), so it refuses to start when
# koordlet-cpp or any of its files is already there, and purges on every exit path.
source "$(dirname "$0")/../e2e/lib.sh"
BIN=$(readlink -f "${1:?usage: deb_test.sh path/to/koordlet}")
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PKG=koordlet-cpp
UNIT=/lib/systemd/system/koordlet.service
HOOKS_DIR=/etc/runtime/hookserver.d
FILES=(/usr/bin/koordlet "$UNIT" /etc/default/koordlet /etc/koordlet/nodeslo.yaml
  "/usr/share/doc/$PKG/copyright" "/usr/share/doc/$PKG/README.md")
# What deb-systemd-helper leaves for an enabled or masked unit; purge must remove all of it.
DSH_STATE=(/etc/systemd/system/multi-user.target.wants/koordlet.service
  /etc/systemd/system/koordlet.service
  /var/lib/systemd/deb-systemd-helper-enabled/koordlet.service.dsh-also
  /var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/koordlet.service
  /var/lib/systemd/deb-systemd-helper-masked/koordlet.service)

[ "$(id -u)" = 0 ] || skip "installs a Debian package into this system: run as root"
for tool in dpkg dpkg-deb dpkg-shlibdeps systemd-analyze strip readelf curl; do
  command -v "$tool" >/dev/null ||
    skip "$tool not installed (packaging/install-deps.sh installs dpkg-dev, systemd, curl)"
done

pkg_status() { dpkg-query -W -f='${db:Status-Status}' "$PKG" 2>/dev/null || true; }

# Never clobber an installation or files this test did not make.
status=$(pkg_status)
if [ -n "$status" ] && [ "$status" != not-installed ]; then
  fail "$PKG is already on this machine (dpkg status: $status); this test installs and" \
    "purges it, so it will not touch that installation: dpkg --purge $PKG first"
fi
for f in "${FILES[@]}" /etc/koordlet "${DSH_STATE[@]}" "$HOOKS_DIR/koordlet.json" /var/lib/koordlet; do
  if [ -e "$f" ] || [ -L "$f" ]; then
    fail "$f exists while $PKG is not installed: refusing to overwrite it"
  fi
done
# The proxy's directory may be there already (another hook server's): then it stays.
HOOKS_DIR_BEFORE=0
[ -d "$HOOKS_DIR" ] && HOOKS_DIR_BEFORE=1

INSTALLED=0
AGENT=""
finish() {
  local rc=$?
  if [ -n "$AGENT" ]; then kill -9 "$AGENT" 2>/dev/null || true; fi
  if [ $INSTALLED = 1 ]; then
    dpkg --purge "$PKG" >"$WORK/purge-on-exit.out" 2>&1 ||
      { cat "$WORK/purge-on-exit.out" >&2; echo "deb_test: dpkg --purge $PKG failed: remove it by hand" >&2; }
  fi
  cleanup
  exit "$rc"
}
trap finish EXIT
trap 'exit 143' INT TERM

# dpkg holds one lock for the whole system: wait (up to 2 min) for an apt or dpkg run
# that is not ours instead of failing on it.
dpkg_do() {
  local out
  for _ in $(seq 1 60); do
    if out=$(dpkg "$@" 2>&1); then printf '%s\n' "$out"; return 0; fi
    case $out in
      *"lock"*) sleep 2 ;;
      *) printf '%s\n' "$out" >&2; fail "dpkg $* failed" ;;
    esac
  done
  fail "dpkg's lock was still held after 2 minutes"
}

# --- build -----------------------------------------------------------------------------
version=$(sed -n "s/^[[:space:]]*version[[:space:]]*:[[:space:]]*'\([^']*\)'.*/\1/p" \
  "$REPO/meson.build" | head -n1)
license=$(sed -n "s/^[[:space:]]*license[[:space:]]*:[[:space:]]*'\([^']*\)'.*/\1/p" \
  "$REPO/meson.build" | head -n1)
arch=$(dpkg --print-architecture)
"$REPO/packaging/deb/build-deb.sh" "$BIN" "$WORK/out" >"$WORK/build.out" 2>&1 ||
  { cat "$WORK/build.out" >&2; fail "build-deb.sh failed"; }
DEB="$WORK/out/${PKG}_${version}_${arch}.deb"
[ -f "$DEB" ] || { ls -l "$WORK/out" >&2; fail "build-deb.sh did not write $DEB"; }
grep -q 'warning' "$WORK/build.out" && { cat "$WORK/build.out" >&2; fail "build-deb.sh warned"; }

# --- metadata --------------------------------------------------------------------------
field() { dpkg-deb -f "$DEB" "$1"; }
[ "$(field Package)" = "$PKG" ] || fail "Package is '$(field Package)'"
[ "$(field Version)" = "$version" ] || fail "Version '$(field Version)' is not meson's $version"
[ "$(field Architecture)" = "$arch" ] || fail "Architecture '$(field Architecture)' is not $arch"
[ "$(field Section)" = admin ] || fail "Section is '$(field Section)'"
[ "$(field Priority)" = optional ] || fail "Priority is '$(field Priority)'"
[[ "$(field Maintainer)" =~ ^.+\ \<.+@.+\>$ ]] || fail "Maintainer '$(field Maintainer)' is not 'Name <email>'"
[ -n "$(field Description)" ] || fail "no Description"
depends=$(field Depends)
echo "Depends: $depends"
# The binary's direct libraries, each through its Debian package.
for lib in 'libc6 ' libssl3 'libprotobuf[0-9]+ ' 'libyaml-cpp[0-9.]+ ' 'libcgroup[0-9]+ ' \
  'libprometheus-cpp-core[0-9.]+ ' 'libstdc\+\+6 '; do
  grep -Eq "(^|, )$lib" <<<"$depends" || fail "Depends lacks /$lib/: $depends"
done
grep -Eq 'lib(a|ub|t)san' <<<"$depends" && fail "Depends names a sanitizer runtime: $depends"
dpkg-deb -I "$DEB" conffiles >"$WORK/conffiles"
printf '/etc/default/koordlet\n/etc/koordlet/nodeslo.yaml\n' | diff - "$WORK/conffiles" ||
  fail "conffiles differ from the two /etc files"
dpkg-deb -e "$DEB" "$WORK/control"
for s in postinst prerm postrm; do
  [ -x "$WORK/control/$s" ] || fail "maintainer script $s missing or not executable"
  sh -n "$WORK/control/$s" || fail "$s is not valid sh"
done

# --- files -----------------------------------------------------------------------------
dpkg-deb -c "$DEB" >"$WORK/contents"
# Regular files only, as "mode owner path".
awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $1, $2, $6 }' "$WORK/contents" | sort >"$WORK/files"
cat >"$WORK/files.want" <<EOF
-rw-r--r-- root/root /etc/default/koordlet
-rw-r--r-- root/root /etc/koordlet/nodeslo.yaml
-rw-r--r-- root/root /lib/systemd/system/koordlet.service
-rw-r--r-- root/root /usr/share/doc/$PKG/README.md
-rw-r--r-- root/root /usr/share/doc/$PKG/copyright
-rwxr-xr-x root/root /usr/bin/koordlet
EOF
sort -o "$WORK/files.want" "$WORK/files.want"
diff "$WORK/files.want" "$WORK/files" || fail "package files differ from the expected list"
# Every directory root-owned 0755, but the checkpoints' (the models' usage: 0700).
awk '$1 ~ /^d/ && $NF !~ /prediction-checkpoints\/?$/ && ($1 != "drwxr-xr-x" || $2 != "root/root") { bad = 1; print } END { exit bad }' \
  "$WORK/contents" || fail "a directory is not root-owned 0755"
grep -Eq '^drwx------ root/root .*/var/lib/koordlet/prediction-checkpoints/?$' "$WORK/contents" ||
  fail "the checkpoint directory is not root-owned 0700"
dpkg-deb -x "$DEB" "$WORK/tree"
readelf -S "$WORK/tree/usr/bin/koordlet" | grep -q '\.symtab' && fail "/usr/bin/koordlet is not stripped"
"$WORK/tree/usr/bin/koordlet" --version >/dev/null || fail "the packaged binary does not run"
grep -q "^License: $license\$" "$WORK/tree/usr/share/doc/$PKG/copyright" ||
  fail "copyright does not state meson.build's license $license"
# The unit keeps what the agent needs: host paths, its resctrl record across restarts,
# writable cgroupfs and /sys.
for line in 'Environment=agent_mode=hostMode' 'EnvironmentFile=-/etc/default/koordlet' \
  'ExecStart=/usr/bin/koordlet $KOORDLET_ARGS' 'Restart=always' 'RuntimeDirectory=koordlet' \
  'RuntimeDirectoryPreserve=yes' 'WantedBy=multi-user.target' \
  'ReadWritePaths=-/etc/runtime/hookserver.d'; do
  grep -qxF "$line" "$WORK/tree$UNIT" || fail "the unit lacks '$line'"
done
grep -Eq '^(ProtectControlGroups|ProtectKernelTunables)=(yes|true)' "$WORK/tree$UNIT" &&
  fail "the unit makes cgroupfs or /sys read-only"

# --- install ---------------------------------------------------------------------------
INSTALLED=1
dpkg_do -i "$DEB" >"$WORK/install.out"
[ "$(pkg_status)" = installed ] || fail "dpkg status after -i: $(pkg_status)"
for f in "${FILES[@]}"; do [ -f "$f" ] || fail "$f not installed"; done
cmp -s "$WORK/tree/usr/bin/koordlet" /usr/bin/koordlet || fail "/usr/bin/koordlet is not the packaged binary"
# postinst enables the unit (symlinks only) wherever deb-systemd-helper exists; with no
# systemd running it starts nothing.
if command -v deb-systemd-helper >/dev/null; then
  [ -L /etc/systemd/system/multi-user.target.wants/koordlet.service ] ||
    fail "postinst did not enable koordlet.service"
fi
if [ ! -d /run/systemd/system ]; then
  for exe in /proc/[0-9]*/exe; do
    [ "$(readlink "$exe" 2>/dev/null)" = /usr/bin/koordlet ] &&
      fail "postinst started the agent although systemd is not running (${exe%/exe})"
  done
fi

# The installed unit, offline (PID 1 need not be systemd). Any complaint naming our unit
# fails, and so does a non-zero exit.
verify_rc=0
systemd-analyze verify "$UNIT" >"$WORK/verify.out" 2>&1 || verify_rc=$?
echo "systemd-analyze verify $UNIT: exit $verify_rc"
sed 's/^/  /' "$WORK/verify.out"
[ $verify_rc = 0 ] || fail "systemd-analyze verify exited $verify_rc"
grep -qi 'koordlet' "$WORK/verify.out" && fail "systemd-analyze verify complains about the unit"

# The installed flags and config, through the installed binary's own parser.
KOORDLET_ARGS=$(set -a; . /etc/default/koordlet; echo "${KOORDLET_ARGS:?}")
echo "KOORDLET_ARGS=$KOORDLET_ARGS"
read -r -a ARGS <<<"$KOORDLET_ARGS"
env -i agent_mode=hostMode /usr/bin/koordlet --check "${ARGS[@]}" >"$WORK/check.out" 2>&1 ||
  { cat "$WORK/check.out" >&2; fail "koordlet --check refused /etc/default/koordlet's flags"; }
grep -q '^config: /etc/koordlet/nodeslo.yaml: ok' "$WORK/check.out" ||
  { cat "$WORK/check.out" >&2; fail "--check did not read /etc/koordlet/nodeslo.yaml"; }
# The shipped spec is koordlet's defaults: its effective spec equals an empty file's.
echo '{}' >"$WORK/empty.yaml"
/usr/bin/koordlet --check --config="$WORK/empty.yaml" >"$WORK/check-empty.out" 2>&1 ||
  fail "--check refused an empty spec"
spec() { sed -n '/^  "spec": {/,/^  }/p' "$1"; }
[ -n "$(spec "$WORK/check-empty.out")" ] || fail "--check printed no spec"
diff <(spec "$WORK/check-empty.out") <(spec "$WORK/check.out") ||
  fail "/etc/koordlet/nodeslo.yaml is not koordlet's defaults"

# --- run as the unit would, plus --dry-run on a private port ---------------------------
PORT=$(free_port)
env -i agent_mode=hostMode /usr/bin/koordlet "${ARGS[@]}" --dry-run --addr="127.0.0.1:$PORT" \
  >"$WORK/agent.log" 2>&1 &
AGENT=$!
PIDS+=("$AGENT")
wait_for "http://127.0.0.1:$PORT/healthz" 200 10
wait_for "http://127.0.0.1:$PORT/readyz" 200 10
curl -sf "http://127.0.0.1:$PORT/metrics" >"$WORK/metrics" || fail "/metrics failed"
grep -q '^koordlet_' "$WORK/metrics" || fail "/metrics has no koordlet_ series"
curl -sf "http://127.0.0.1:$PORT/config" >"$WORK/config.json" || fail "/config failed"
grep -q '"file": "/etc/koordlet/nodeslo.yaml"' "$WORK/config.json" ||
  fail "the agent did not load /etc/koordlet/nodeslo.yaml"
# No token yet: said once, and node metrics go on (checked above).
if [ ! -e /etc/koordlet/kubelet-token ]; then
  n=$(grep -c 'kubelet-token: No such file or directory' "$WORK/agent.log" || true)
  [ "$n" = 1 ] || { cat "$WORK/agent.log" >&2; fail "the missing token was logged $n times, not once"; }
fi
kill -TERM "$AGENT"
for _ in $(seq 1 50); do kill -0 "$AGENT" 2>/dev/null || break; sleep 0.1; done
kill -0 "$AGENT" 2>/dev/null && { cat "$WORK/agent.log" >&2; fail "agent still running 5 s after SIGTERM"; }
agent_rc=0
wait "$AGENT" || agent_rc=$?
AGENT=""
[ $agent_rc = 0 ] || { cat "$WORK/agent.log" >&2; fail "agent exited $agent_rc on SIGTERM"; }

# --- upgrade in place keeps an edited conffile ------------------------------------------
echo '# edited by deb_test' >>/etc/default/koordlet
dpkg_do -i "$DEB" >"$WORK/reinstall.out"
grep -q 'edited by deb_test' /etc/default/koordlet || fail "reinstall replaced the edited conffile"

# --- remove, then purge ---------------------------------------------------------------
[ -d "$HOOKS_DIR" ] || fail "$HOOKS_DIR not installed"
CKPT=/var/lib/koordlet/prediction-checkpoints
[ "$(stat -c %a "$CKPT" 2>/dev/null)" = 700 ] || fail "$CKPT not installed with mode 0700"
# What a running agent leaves there: remove keeps it, purge takes it.
echo '{}' >"$CKPT/__node__"
# What a running agent leaves there (it keeps it on exit, as koordlet): remove takes it.
echo '{}' >"$HOOKS_DIR/koordlet.json"
dpkg_do -r "$PKG" >"$WORK/remove.out"
[ -e "$HOOKS_DIR/koordlet.json" ] && fail "dpkg -r left the agent's registration $HOOKS_DIR/koordlet.json"
if [ $HOOKS_DIR_BEFORE = 0 ] && [ -e "$HOOKS_DIR" ]; then fail "dpkg -r left $HOOKS_DIR"; fi
[ "$(pkg_status)" = config-files ] || fail "dpkg status after -r: $(pkg_status)"
if [ -e /usr/bin/koordlet ] || [ -e "$UNIT" ]; then fail "dpkg -r left the binary or the unit"; fi
[ -f /etc/default/koordlet ] || fail "dpkg -r removed a conffile"
[ -f "$CKPT/__node__" ] || fail "dpkg -r removed the prediction checkpoints"
dpkg_do --purge "$PKG" >"$WORK/purge.out"
INSTALLED=0
status=$(pkg_status)
[ -z "$status" ] || [ "$status" = not-installed ] || fail "dpkg status after --purge: $status"
for f in "${FILES[@]}" /etc/koordlet "/usr/share/doc/$PKG" "${DSH_STATE[@]}" /var/lib/koordlet; do
  if [ -e "$f" ] || [ -L "$f" ]; then fail "$f is left after purge"; fi
done
echo "deb_test: $(basename "$DEB") built, installed, verified, ran, purged"
