"""The file text benchmark runs end to end at a tiny size and prints every figure it
reports: files a second per format in the sandbox and in-process, their ratio, what each
reading said, and the peak memory of the worker and of its reading children."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.bench_run import bench_run

FORMATS = ("txt", "html", "rtf", "docx", "xlsx", "pptx", "odt", "epub", "pdf", "eml", "ics")


def test_file_text_bench_prints_its_figures(tmp_path: Path) -> None:
    out = bench_run(
        "file_text_bench.py",
        "--quick",
        "--files",
        "2",
        "--keep",
        str(tmp_path),
        tmp_path=tmp_path,
        timeout=300,
    )
    ocr = shutil.which("tesseract") is not None
    assert re.search(r"^input: +\d+ files, 2 per format \(.*\), [\d.]+ MB, made in", out, re.M)
    number = r"[\d.]+"
    for label in (*FORMATS, *(("png \\(OCR\\)", "scanned pdf \\(OCR\\)") if ocr else ())):
        # Every file of every format was read, and its text found: none failed.
        row = rf"^{label} +\d +{number} +{number} +{number}  done \d$"
        assert re.search(row, out, re.M), (label, out)
    totals = ("without OCR", "all") if ocr else ("all",)
    for label in totals:
        assert re.search(rf"^{label} +\d+ +{number} +{number} +{number}$", out, re.M), out
    assert re.search(r"^text: ubuntu-irc .* load average at start [\d.]+ on \d+ CPUs$", out, re.M)
    assert re.search(r"^worker: each child imports its reader's library$", out, re.M)
    assert re.search(
        r"^peak RSS: worker \d+ MB, largest reading child \d+ MB \(within the 300 MB target\);"
        r" in-process baseline \d+ MB$",
        out,
        re.M,
    ), out
    # The files went where --keep said.
    assert len(list((tmp_path / "files").iterdir())) >= 2 * len(FORMATS)
