#!/usr/bin/env bash
# Installs what the blind rounds' services and proxies run on, when it is missing: Node.js
# (byok round 2), Python 3 with pycryptodome (byok round 3, the platform rounds' proxies), a
# JDK (byok round 4, built once with javac), Perl with CryptX (byok round 5). CI then sets HARNESS_REQUIRE_BLIND, so that a
# round that cannot run fails instead of being skipped.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-pip)
perl -MCrypt::AuthEnc::GCM -MJSON::PP -e 1 >/dev/null 2>&1 || missing+=(libcryptx-perl)
if ((${#missing[@]})); then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "missing ${missing[*]} and apt-get is not available: install them" >&2
        exit 1
    fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! python3 -c 'import Crypto.Cipher.AES' >/dev/null 2>&1; then
    python3 -m pip install --quiet pycryptodome ||
        python3 -m pip install --quiet --break-system-packages pycryptodome
fi
node --version >/dev/null
javac --version >/dev/null
python3 -c 'import Crypto.Cipher.AES'
perl -MCrypt::AuthEnc::GCM -MJSON::PP -e 1
