#!/usr/bin/env bash
# Builds the container image of the harness, FROM scratch, from the static executable:
#
#   bash scripts/build-image.sh [TAG]        # default: voice-harness:dev
#
# It runs scripts/build-static.sh (into dist/), lays out the image's files in target/image/
# (see Dockerfile), runs `docker build`, and prints the image's size. Needs a Docker engine.
set -euo pipefail
cd "$(dirname "$0")/.."

tag=${1:-voice-harness:dev}
bash scripts/build-static.sh dist

ctx=target/image
rm -rf "$ctx"
mkdir -p "$ctx/rootfs/usr/local/bin" "$ctx/rootfs/etc" "$ctx/rootfs/tmp" "$ctx/data"
cp dist/harness "$ctx/rootfs/usr/local/bin/harness"
ln -s harness "$ctx/rootfs/usr/local/bin/platform"
ln -s harness "$ctx/rootfs/usr/local/bin/customer-kms-sim"
chmod 0755 "$ctx/rootfs/usr/local/bin/harness"
chmod 1777 "$ctx/rootfs/tmp"
printf 'root:x:0:0:root:/:/sbin/nologin\nharness:x:65532:65532:harness:/data:/sbin/nologin\n' \
    >"$ctx/rootfs/etc/passwd"
printf 'root:x:0:\nharness:x:65532:\n' >"$ctx/rootfs/etc/group"
cp Dockerfile "$ctx/Dockerfile"

version=$(dist/harness --version)
commit=$(sed -n 's/.*(commit \([^,]*\),.*/\1/p' <<<"$version")
# The classic builder: it needs no buildx plugin, and a scratch image needs nothing more.
DOCKER_BUILDKIT=0 docker build --quiet \
    --label "org.opencontainers.image.title=voice-harness" \
    --label "org.opencontainers.image.version=${version#harness }" \
    --label "org.opencontainers.image.revision=$commit" \
    -t "$tag" "$ctx" >/dev/null

size=$(docker image inspect -f '{{.Size}}' "$tag")
echo "build-image: $tag, $(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1000000 }') MB ($version)"
