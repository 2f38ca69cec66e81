"""Build the debian-devguides collection: Debian's two packaging guides, one language a chapter.

    python benchmarks/collections/debian_devguides.py [--extracted DIR] [--out DIR] [--questions SET]

Downloads (Debian 12 "bookworm", main) developers-reference 12.18 with its -de, -fr, -it, -ja and -ru
translations, and maint-guide 1.2.53 with its -de, -es, -fr, -it and -ja translations, with
`apt-get download`, unpacks them with `dpkg-deb -x` (or reads them unpacked as DIR/<package>/ with
--extracted) and writes benchmarks/collections/debian-devguides/ by the rules of debian-manuals
(debian_manuals.build and .translated): each chapter in one language, heading questions, and the
translated-answer questions. Built after every fusion and chunking setting was chosen, as a check
none of them was tuned on. See the README there.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import docset_build as b
from debian_manuals import TEMPLATES, ManualSet, Page, build, translated

DEVREF = ("developers-reference", "12.18")
MAINT = ("maint-guide", "1.2.53")
DEVREF_LANGUAGES = ("en", "de", "fr", "it", "ja", "ru")
MAINT_LANGUAGES = ("en", "de", "es", "fr", "it", "ja")
# Pages of Developer's Reference that are not chapters: the contents, the index, the search page and
# the whole book on one page.
NOT_CHAPTERS = frozenset({"index.html", "genindex.html", "search.html", "developers-reference.html"})


def package(guide: str, language: str) -> str:
    return guide if language == "en" else f"{guide}-{language}"


def devref_pages(root: Path) -> list[Page]:
    """Developer's Reference: one Sphinx page a chapter, the translations in a folder each."""
    base = "usr/share/developers-reference"
    english = root / DEVREF[0] / base
    pages = []
    for en in sorted(english.glob("*.html")):
        if en.name in NOT_CHAPTERS:
            continue
        files = {
            lang: en if lang == "en" else root / package(DEVREF[0], lang) / base / lang / en.name
            for lang in DEVREF_LANGUAGES
        }
        pages.append(Page(DEVREF[0], files, by_language=True))
    return pages


def maint_pages(root: Path) -> list[Page]:
    """The New Maintainers' Guide: one DocBook page a chapter, `name.<lang>.html`."""
    pages = []
    english = root / MAINT[0] / "usr/share/doc/maint-guide/html"
    for en in sorted(english.glob("*.en.html")):
        name = en.name.removesuffix(".en.html")
        if name == "index":
            continue
        files = {
            lang: root
            / package(MAINT[0], lang)
            / "usr/share/doc"
            / package(MAINT[0], lang)
            / "html"
            / f"{name}.{lang}.html"
            for lang in MAINT_LANGUAGES
        }
        pages.append(Page(MAINT[0], files))
    return pages


def guides_pages(root: Path) -> list[Page]:
    return [*devref_pages(root), *maint_pages(root)]


LANGUAGES = ("en", "de", "fr", "es", "it", "ja", "ru")
GUIDES = ManualSet(
    pages=guides_pages,
    languages=LANGUAGES,
    packages=(
        *(package(DEVREF[0], lang) for lang in DEVREF_LANGUAGES),
        *(package(MAINT[0], lang) for lang in MAINT_LANGUAGES),
    ),
    salt="pgrecall-debian-devguides-1",
    templates={
        **TEMPLATES,
        "it": "Cosa dovrei sapere su {h}?",
        "ru": "Что нужно знать о {h}?",
    },
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--extracted", type=Path, help="a folder holding each package unpacked as <package>/")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "debian-devguides")
    parser.add_argument("--questions", choices=("headings", "translated"), default="headings")
    args = parser.parse_args()
    packages = [
        *((package(DEVREF[0], lang), DEVREF[1]) for lang in DEVREF_LANGUAGES),
        *((package(MAINT[0], lang), MAINT[1]) for lang in MAINT_LANGUAGES),
    ]
    root = b.extracted(packages, args.extracted)
    print(
        build(root, args.out, GUIDES) if args.questions == "headings" else translated(root, args.out, GUIDES)
    )


if __name__ == "__main__":
    main()
