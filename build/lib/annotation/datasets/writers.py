"""Writers: where a formatter's bytes go. A file (written whole or not at all, with its
sha256 and size) or an HTTP response (StreamingHttpResponse over the same iterator)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable


@dataclass(frozen=True)
class Written:
    path: str
    sha256: str
    size: int


def write_stream(chunks: Iterable[bytes], out: BinaryIO) -> tuple[str, int]:
    """Copy chunks to an open binary file; return (sha256 hex, size)."""
    digest = hashlib.sha256()
    size = 0
    for chunk in chunks:
        out.write(chunk)
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def temporaries(path: str | Path) -> list[Path]:
    """write_file's temporaries beside `path`: left behind only by a writer that was killed."""
    path = Path(path)
    if not path.parent.exists():
        return []
    return [p for p in path.parent.iterdir() if p.name.startswith(_temp_prefix(path))]


def write_file(chunks: Iterable[bytes], path: str | Path, *, overwrite: bool = True) -> Written:
    """Write to a temporary file beside `path`, then move it into place: a reader never sees
    half a file. With overwrite=False an existing file is an error (FileExistsError)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            sha, size = write_stream(chunks, out)
            out.flush()
            os.fsync(out.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # atomic and fails when the name exists
            os.unlink(tmp)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return Written(str(path), sha, size)


def file_sha256(path: str | Path, block: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while data := f.read(block):
            digest.update(data)
    return digest.hexdigest()
