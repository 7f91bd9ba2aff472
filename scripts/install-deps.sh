#!/usr/bin/env bash
# Install what the testbed needs on Debian 12, idempotently: Debian packages
# that are missing, then the virtual environment at .venv with pinned deps.
# Run as root (apt); a second run with nothing missing changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Mininet and the tools its hosts use; shellcheck and vagrant let the tests
# check the lab VM's files (the VM itself cannot boot here); chromium lets a
# test open report.html headless and check that every plot shows; openssh-server
# lets the cluster tests reach this machine as a server over ssh (they start a
# private sshd of their own and stop it; the package's own service is not needed).
debian_packages=(mininet iputils-ping bridge-utils tcpdump iproute2 ethtool python3-venv python3-dev
                 shellcheck vagrant chromium openssh-client openssh-server)
missing=()
for pkg in "${debian_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing Debian packages: ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then
        echo "error: Debian packages ${missing[*]} are missing and installing them needs root" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The venv must be made by Debian's python3 so that Mininet (a Debian
# package) is importable from it.
if [ ! -x .venv/bin/python ]; then
    echo "creating .venv with /usr/bin/python3"
    /usr/bin/python3 -m venv --system-site-packages .venv
fi
stamp=.venv/.installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "installing the testbed and its pinned dependencies into .venv"
    .venv/bin/pip install -q --upgrade "pip==25.3"
    .venv/bin/pip install -q -e ".[dev]"
    touch "$stamp"
fi
# The agents' native NIC (testbed/host/nic_native): built once into the cache; without a
# compiler the agents use the pure-Python NIC.
.venv/bin/python -m testbed.host.nic_native
# The transport compiled by mypyc from its own source (testbed/compiled/), cached by the source's
# hash; without a compiler, or for a source changed since, it runs interpreted.
.venv/bin/python -m testbed.compiled
