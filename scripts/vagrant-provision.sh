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

for binary in p4c-bm2-ss simple_switch_grpc; do
    if ! command -v "$binary" > /dev/null; then
        echo "provisioning failed: $binary is not on PATH after installing the p4lang packages" >&2
        exit 1
    fi
done

# Mininet and the project's own dependencies; the same script as on Debian.
apt-get install -y -qq mininet python3-venv python3-dev
cd /vagrant
bash scripts/install-deps.sh
echo "lab ready: cd /vagrant && make test"
