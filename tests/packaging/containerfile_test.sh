#!/usr/bin/env bash
echo "containerfile_test: not written yet" >&2
exit 1
