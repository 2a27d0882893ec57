#!/usr/bin/env python3
"""Every link of the built guide resolves: python3 .ci/guide_links_check.py target/guide

mdBook itself does not fail on a broken link. This reads every page it wrote and checks
every relative href and src: the file exists (a folder: its index.html), and a #fragment
names an id (or a name) on the page it points to (the page itself for a bare #fragment).
Links with a scheme (https:, mailto:) are not followed. Exit status 1 lists every broken
link with the page it is on; 0 prints how many were checked.
"""
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links, self.base = set(), [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        if tag == "base" and a.get("href"):
            self.base = a["href"]
        for key in ("href", "src"):
            if a.get(key) is not None and tag not in ("base",):
                self.links.append((tag, a[key]))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: guide_links_check.py BUILD_DIR")
    root = Path(sys.argv[1]).resolve()
    pages = {}
    for f in sorted(root.rglob("*.html")):
        p = Page()
        p.feed(f.read_text(encoding="utf-8"))
        pages[f] = p
    if not pages:
        sys.exit(f"no pages under {root}")
    broken, checked = [], 0
    for f, page in pages.items():
        # 404.html names its files from the site's root (<base href="/">), where it is served.
        here = root if page.base and page.base.startswith("/") else f.parent
        for tag, link in page.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue
            checked += 1
            path = unquote(parts.path)
            if not path:
                target = f
            else:
                target = (root / path.lstrip("/")) if path.startswith("/") else (here / path)
                target = target.resolve()
                if target.is_dir():
                    target = target / "index.html"
            where = f"{f.relative_to(root)}: <{tag}> {link}"
            try:
                target.relative_to(root)
            except ValueError:
                broken.append(f"{where}: leaves the book")
                continue
            if not target.is_file():
                broken.append(f"{where}: no file {target.relative_to(root)}")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else set()
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where}: no #{parts.fragment} in {target.relative_to(root)}")
    if broken:
        print(f"guide: {len(broken)} broken link(s):", file=sys.stderr)
        for b in broken:
            print(f"  {b}", file=sys.stderr)
        sys.exit(1)
    print(f"guide: {checked} links on {len(pages)} pages, every one resolves")


if __name__ == "__main__":
    main()
