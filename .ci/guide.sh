#!/usr/bin/env bash
# The guide (docs/guide, mdBook): built into target/guide with the pinned mdBook, and failed
# on a broken link. mdBook itself does not fail on one, so:
#  - .ci/guide_links.py (the book's preprocessor) fails the build on a link to a file of the
#    repository that does not exist, and checks the links of the README and the crates' READMEs the same way (--check);
#  - .ci/guide_links_check.py reads every built page: every relative href and src, and every
#    #anchor, must resolve.
# Last, a copy of the built guide with one broken link must fail the check (the check bites).
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-mdbook.sh
export PATH="$HOME/.cargo/bin:$PATH"

python3 .ci/guide_links.py --check README.md docs/performance-log.md scenarios/README.md \
    customer-kms-sim/README.md
rm -rf target/guide
mdbook build docs/guide
python3 .ci/guide_links_check.py target/guide

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
cp -r target/guide "$probe/guide"
sed -i 's|</main>|<a href="harness-up.html#no-such-heading">x</a></main>|' "$probe/guide/introduction.html"
grep -q 'no-such-heading' "$probe/guide/introduction.html"
if python3 .ci/guide_links_check.py "$probe/guide" 2>/dev/null; then
    echo "guide: a broken link in the built pages was not caught" >&2
    exit 1
fi
printf '[x](no-such-file.md)\n' >"$probe/broken.md"
if python3 .ci/guide_links.py --check "$probe/broken.md" 2>/dev/null; then
    echo "guide: a link to a file that does not exist was not caught" >&2
    exit 1
fi
echo "guide: built in target/guide; a broken link fails the check"
