"""What loading one language's high-accuracy models takes lingua at its peak, for each language.

Each language in a fresh interpreter (glibc's mmap threshold fixed as the detection process fixes it,
nothing else loaded but an anchor): the resident size's peak while its models load, above the size
before, and what stays once loaded (lingua's library pages it read included). Latin-script
languages load lazily, as a short text loads them (beside the anchor, Latin, or Tagalog for Latin);
the others, whose texts take a script of their own, through a detector preloading them, which
takes as much or a little more. Prints the table of src/pgrecall/detection/load_peaks.py.

Run: python benchmarks/lingua_load_peaks.py
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

ONE = r"""
import ctypes, json, sys
from lingua import Language, LanguageDetectorBuilder
libc = ctypes.CDLL("libc.so.6")
libc.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD, as pgrecall.detection.process_memory fixes it
def rss():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20
def peak():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) / 1024
by = {l.iso_code_639_1.name.lower(): l for l in Language.all()}
code, lazy = sys.argv[1], sys.argv[2] == "lazy"
anchor = by["la" if code != "la" else "tl"]
if lazy:
    LanguageDetectorBuilder.from_languages(anchor).with_preloaded_language_models().build()
libc.malloc_trim(0)
with open("/proc/self/clear_refs", "w") as refs:
    refs.write("5")  # the peak from here on
before = rss()
if lazy:
    detector = LanguageDetectorBuilder.from_languages(by[code], anchor).build()
    detector.compute_language_confidence_values("Note 3 on Winterreifen im Oktober and drag.")  # LOAD_PROBE
else:
    LanguageDetectorBuilder.from_languages(by[code]).with_preloaded_language_models().build()
top = peak()
libc.malloc_trim(0)
print(json.dumps([rss() - before, top - before]))
"""


def main() -> None:
    """Measure every language lingua knows and print the table."""
    from lingua import Language

    latin = {lang.iso_code_639_1.name.lower() for lang in Language.all_with_latin_script()}
    rows = {}
    for code in sorted(lang.iso_code_639_1.name.lower() for lang in Language.all()):
        mode = "lazy" if code in latin else "preload"
        out = subprocess.run(
            [sys.executable, "-c", ONE, code, mode], capture_output=True, text=True, check=True
        ).stdout
        rows[code] = [math.ceil(v) for v in json.loads(out)]
    print("LOAD_MB = {")
    for code, (size, top) in rows.items():
        print(f'    "{code}": ({size}, {top}),')
    print("}")


if __name__ == "__main__":
    main()
