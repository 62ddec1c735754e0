#!/usr/bin/env bash
# Installs an OpenCL driver for the CPU that can compile for this machine: Debian's PoCL 3.1
# (LLVM 15). PyPI's pocl-binary-distribution 3.0 (LLVM 14) fails on newer CPUs such as
# AMD Zen 5 ("unknown target CPU 'generic'"), so the opencl back end would be unavailable.
# Best effort: without root or apt-get it prints how to do it and succeeds, and the opencl
# tests then skip with the reason.
set -u
if [ -e /etc/OpenCL/vendors/pocl.icd ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "note: for the opencl back end on a CPU, install Debian's PoCL: sudo apt-get install pocl-opencl-icd"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
timeout 600 apt-get install -y -q pocl-opencl-icd >/dev/null 2>&1 ||
    { timeout 300 apt-get update -q >/dev/null 2>&1 && timeout 600 apt-get install -y -q pocl-opencl-icd >/dev/null 2>&1; } ||
    echo "note: could not install Debian's pocl-opencl-icd; the opencl back end may be unavailable"
exit 0
