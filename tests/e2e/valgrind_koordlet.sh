#!/bin/sh
# The agent under valgrind memcheck, for an end-to-end test that starts
# $KOORDLET_BIN: this script stands in for the binary ($KOORDLET_REAL_BIN).
# Any memory error, or a definite or indirect leak at exit, turns the agent's
# exit status into 97, which the test's "SIGTERM ends it with status 0" catches;
# valgrind's report goes to the agent's log, which the test prints on failure.
# "Possibly lost" blocks are not errors: they are the static objects of the
# libraries (protobuf descriptors, OpenSSL), reachable through interior pointers.
exec valgrind --tool=memcheck --error-exitcode=97 --leak-check=full \
  --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
  --num-callers=30 "${KOORDLET_REAL_BIN:?KOORDLET_REAL_BIN is not set}" "$@"
