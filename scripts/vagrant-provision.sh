#!/usr/bin/env bash
# Provision the lab VM (Ubuntu 22.04): the P4 project's published packages
# for p4c, bmv2 (with simple_switch_grpc) and PI, then Mininet and the
# project itself through its own installer. Safe to run again.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
# shellcheck source=/dev/null
. /etc/os-release
release="${VERSION_ID}"
repo="https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_${release}"
keyring=/etc/apt/trusted.gpg.d/home_p4lang.gpg

apt-get update -qq
apt-get install -y -qq curl gnupg ca-certificates make

if [ ! -f "$keyring" ]; then
    curl -fsSL "${repo}/Release.key" | gpg --dearmor > "$keyring"
fi
echo "deb ${repo}/ /" > /etc/apt/sources.list.d/home-p4lang.list
apt-get update -qq
apt-get install -y -qq p4lang-p4c p4lang-bmv2 p4lang-pi

for binary in p4c-bm2-ss simple_switch_grpc simple_switch simple_switch_CLI; do
    if ! command -v "$binary" > /dev/null; then
        echo "provisioning failed: $binary is not on PATH after installing the p4lang packages" >&2
        exit 1
    fi
done

# Mininet and the project's own dependencies; the same script as on Debian.
# python3-thrift is what simple_switch_CLI (queue rates, register reads) runs on.
apt-get install -y -qq mininet python3-venv python3-dev python3-thrift
cd /vagrant
bash scripts/install-deps.sh

# The testbed's own check of the bmv2 it will drive: a simple_switch_grpc built
# without Thrift, or a CLI that cannot start, is named here rather than at the
# first run; `make test` would otherwise skip the bmv2 tests with that reason.
if ! .venv/bin/python -c 'import sys; from testbed.targets import bmv2_problem; p = bmv2_problem(); print(p or "", file=sys.stderr); sys.exit(1 if p else 0)'; then
    echo "provisioning failed: the bmv2 above cannot run the testbed's scenarios" >&2
    exit 1
fi
echo "lab ready: cd /vagrant && make test"
