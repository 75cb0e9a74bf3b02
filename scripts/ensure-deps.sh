#!/usr/bin/env bash
# Installs what building ReactiveUV needs from Debian when it is missing: libuv1-dev (the
# loop, timers and IO), libhyperscan-dev (logcast's filters), libnats-dev (cnats, for
# ReactiveUVNATS), nats-server (the NATS tests start real servers) and pkg-config (how
# SwiftPM finds the libraries). Safe to run every time.
set -euo pipefail

need=()
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
if ! pkg-config --exists libuv 2>/dev/null; then need+=(libuv1-dev); fi
# ReactiveUVTLS links OpenSSL; its tests make certificates with the openssl command.
if ! pkg-config --exists openssl 2>/dev/null; then need+=(libssl-dev); fi
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# logcast's syslog tests send with logger(1).
command -v logger >/dev/null 2>&1 || need+=(bsdutils)
# logcast's GREP filters: Hyperscan (x86-64 only; the Debian package exists for amd64).
if ! pkg-config --exists libhs 2>/dev/null; then need+=(libhyperscan-dev); fi
# ReactiveUVNATS: cnats; its tests and logcast's NATS tests: nats-server (Debian puts it in
# /usr/sbin, which a user's PATH may lack).
if ! pkg-config --exists libnats 2>/dev/null; then need+=(libnats-dev); fi
have_nats_server() { command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ]; }
have_nats_server || need+=(nats-server)
# logcast's namespaced NATS fault tests: ip(8) (network namespaces, veth, a bridge) and
# iptables (partitions); Debian puts both in /usr/sbin.
have_sbin() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }
have_sbin ip || need+=(iproute2)
have_sbin iptables || need+=(iptables)
[ ${#need[@]} -eq 0 ] && exit 0

echo "ensure-deps: installing ${need[*]} with apt-get" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "ensure-deps: need root (or sudo) to apt-get install ${need[*]}" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}" >/dev/null
pkg-config --exists libuv || { echo "ensure-deps: libuv still not found by pkg-config" >&2; exit 1; }
pkg-config --exists libhs || { echo "ensure-deps: libhs (Hyperscan) still not found by pkg-config" >&2; exit 1; }
pkg-config --exists libnats || { echo "ensure-deps: libnats still not found by pkg-config" >&2; exit 1; }
have_nats_server || { echo "ensure-deps: nats-server still not installed" >&2; exit 1; }
