#!/bin/sh
# The v2-node test's part of the guest payload (make-node-image.sh copies it to
# /koordlet/custom-payload.sh; payload.sh runs it once containerd answers and the test
# image is imported): the node scene (test_v2_node.cpp) with the agent beside it, both
# host binaries on the guest's glibc. Its figures and versions go to the console as
# KOORDLET-NODE lines (boot-node.sh prints those); the whole output only on failure.
export LD_LIBRARY_PATH=/koordlet/host/lib
export KOORDLET_BIN=/koordlet/host/bin/koordlet
# With a kubelet in the image (v2_node.sh's KOORDLET_NODE_KUBELET), its hidden scene too.
spec=
# An operator's check's settings (v2_node.sh's KOORDLET_NODE_FILES).
[ -f /koordlet/host/bin/node-check.env ] && . /koordlet/host/bin/node-check.env
if [ -x /koordlet/host/bin/kubelet ]; then
  export KOORDLET_KUBELET=/koordlet/host/bin/kubelet
  spec=${KOORDLET_NODE_SPEC:-'[v2node],[kubelet]'}
fi
/koordlet/host/bin/v2_node_test --use-colour no --durations yes $spec >/tmp/v2-node.log 2>&1
rc=$?
# A WARN's text as Catch2 wraps it at 80 columns: from its first line to the blank one.
awk '/v2-node|test cases|assertions| s: / { p = 1 } p && /^$/ { p = 0 } p' /tmp/v2-node.log |
  sed 's/^/KOORDLET-NODE test: /'
if [ $rc -ne 0 ]; then
  echo "KOORDLET-NODE-FAIL v2_node_test rc=$rc; its output:"
  cat /tmp/v2-node.log
fi
exit $rc
