#!/usr/bin/env python3
"""mdBook preprocessor of the guide (docs/guide/book.toml): links that leave the book.

A chapter links to files of the repository outside the guide (a crate's README, an example
script, docs/performance-log.md) by their path relative to the chapter, so that the links
work where the Markdown is read (on the forge, in an editor). In the built book those paths
lead nowhere: each becomes the file's address on the web, GUIDE_REPO_URL (default: the
placeholder the README uses) + /blob/ (or /tree/ for a folder) + GUIDE_REPO_REF (default
main) + the path. A link to a file or folder that does not exist, or to a heading that a
Markdown file does not have, fails the build: broken links inside the book are found by
.ci/guide_links_check.py over the built pages.

`python3 .ci/guide_links.py --check README.md` checks a Markdown file outside the book the
same way (every relative link and #heading), and prints nothing when all resolve.
"""
import json
import os
import re
import sys
from pathlib import Path

DEFAULT_URL = "https://github.com/your-org/voice-agent-platform-harness"


def slug(heading):
    """The anchor a forge and mdBook give a heading."""
    h = heading.strip().lower().replace("`", "")
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors_of(path):
    out, fence = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"^#{1,6} (.*)", line)
        if m:
            out.add(slug(m.group(1)))
    return out


# A link or an image; its text may hold code spans (`[`harness up`](harness-up.md)`).
LINK = re.compile(r"(!?\[(?:[^\]`]|`[^`]*`)*\])\(([^)\s]+)\)")


def rewrite(content, chapter_dir, src, repo, base, ref, errors, where, included):
    def one(m):
        target = m.group(2)
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return m.group(0)
        path, _, frag = target.partition("#")
        resolved = (chapter_dir / path).resolve()
        try:
            resolved.relative_to(src)
            return m.group(0)  # inside the book: mdBook's, checked over the built pages
        except ValueError:
            pass
        if resolved in included:
            # A file a chapter includes whole (docs/interface.md): that chapter.
            if frag and frag not in anchors_of(resolved):
                errors.append(f"{where}: {target}: {resolved.name} has no heading #{frag}")
            rel = os.path.relpath(included[resolved], chapter_dir)
            return f"{m.group(1)}({Path(rel).as_posix()}" + (f"#{frag})" if frag else ")")
        try:
            rel = resolved.relative_to(repo)
        except ValueError:
            errors.append(f"{where}: {target} leaves the repository")
            return m.group(0)
        if not resolved.exists():
            errors.append(f"{where}: {target}: no such file in the repository ({rel})")
            return m.group(0)
        if frag and resolved.suffix == ".md" and frag not in anchors_of(resolved):
            errors.append(f"{where}: {target}: {rel} has no heading #{frag}")
        kind = "tree" if resolved.is_dir() else "blob"
        url = f"{base}/{kind}/{ref}/{rel.as_posix()}" + (f"#{frag}" if frag else "")
        return f"{m.group(1)}({url})"

    out, fence = [], False
    for line in content.split("\n"):
        if line.startswith("```"):
            fence = not fence
        if fence or "](" not in line:
            out.append(line)
            continue
        out.append(LINK.sub(one, line))
    return "\n".join(out)


def chapters(items):
    for item in items:
        if isinstance(item, dict) and "Chapter" in item:
            yield item["Chapter"]
            yield from chapters(item["Chapter"].get("sub_items", []))


def check(files):
    """`--check FILE.md...`: every relative link of each file names a file that exists, and a
    #heading that a Markdown target has (the README's links into the guide)."""
    errors = []
    for name in files:
        path = Path(name).resolve()
        fence = False
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                fence = not fence
            if fence:
                continue
            for m in LINK.finditer(line):
                target = m.group(2)
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                    continue
                where = f"{name}:{n}: {target}"
                file, _, frag = target.partition("#")
                resolved = (path.parent / file).resolve() if file else path
                if not resolved.exists():
                    errors.append(f"{where}: no such file")
                elif frag and resolved.suffix == ".md" and frag not in anchors_of(resolved):
                    errors.append(f"{where}: no heading #{frag}")
    for e in errors:
        print(f"guide: broken link: {e}", file=sys.stderr)
    sys.exit(1 if errors else 0)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "supports":
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        check(sys.argv[2:])
    context, book = json.load(sys.stdin)
    root = Path(context["root"]).resolve()
    src = (root / context["config"]["book"].get("src", "src")).resolve()
    repo = root.parent.parent.resolve()
    base = os.environ.get("GUIDE_REPO_URL", DEFAULT_URL).rstrip("/")
    ref = os.environ.get("GUIDE_REPO_REF", "main")
    errors = []
    items = list(chapters(book.get("items", book.get("sections", []))))
    # Chapters that are one include of a file outside the book stand for that file.
    included = {}
    for ch in items:
        if ch.get("source_path"):
            source = src / ch["source_path"]
            m = re.fullmatch(r"\{\{#include ([^}]+)\}\}\s*", source.read_text(encoding="utf-8"))
            if m:
                included[(source.parent / m.group(1)).resolve()] = source
    for ch in items:
        if not ch.get("source_path"):
            continue
        ch["content"] = rewrite(
            ch["content"], (src / ch["source_path"]).parent, src, repo, base, ref, errors,
            ch["source_path"], included,
        )
    if errors:
        for e in errors:
            print(f"guide: broken link: {e}", file=sys.stderr)
        sys.exit(1)
    json.dump(book, sys.stdout)


if __name__ == "__main__":
    main()
