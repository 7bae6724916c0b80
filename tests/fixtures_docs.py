"""Builders for test document folders: the bundled sample project plus awkward files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample_project"


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF with a real text layer (Helvetica), built by hand with a correct xref table."""
    return paged_pdf([[text]])


def paged_pdf(pages: list[list[str]]) -> bytes:
    """A PDF with a real text layer (Helvetica), one line of text per string, built by hand with a correct xref."""
    kids = " ".join(f"{4 + 2 * k} 0 R" for k in range(len(pages)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for k, lines in enumerate(pages):
        shown = " ".join(f"({line}) Tj 0 -14 Td" for line in lines)
        stream = f"BT /F1 12 Tf 72 720 Td {shown} ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {5 + 2 * k} 0 R "
            "/Resources << /Font << /F1 3 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


def make_project(root: Path, awkward: bool = True) -> Path:
    """A copy of the sample project (plus, optionally, files that must be skipped) under `root`."""
    shutil.copytree(SAMPLE, root)
    if awkward:
        (root / "scan.pdf").write_bytes(minimal_pdf("Quarterly ingestion report for the vector store"))
        (root / "page.html").write_text(
            "<html><head><title>Ops page</title><script>var x=1;</script></head>"
            "<body><h1>Operations</h1><p>Restart the Chroma server with chroma run.</p></body></html>",
            encoding="utf-8",
        )
        (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
        (root / "blob.txt").write_bytes(b"abc\x00\x01\x02")
        (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
        (root / "empty.md").write_text("", encoding="utf-8")
    return root


def symlink_out(root: Path, outside: Path) -> None:
    outside.write_text("secret outside the project", encoding="utf-8")
    os.symlink(outside, root / "escape.txt")
