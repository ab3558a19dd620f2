#!/usr/bin/env bash
echo "deb_test: not written yet" >&2
exit 1
