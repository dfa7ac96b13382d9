"""UTF-8 text files whose decoding errors name the file, the 1-based line and the byte."""
from __future__ import annotations

import codecs

CHUNK = 1 << 24  # bytes read at a time by check_utf8


class NotUtf8Error(ValueError):
    """A file that is not UTF-8 text; the message names the file, the line and the first bad byte."""


def check_utf8(path: str, what: str = "") -> None:
    """Raise :class:`NotUtf8Error` naming ``path`` (and ``what`` it is), the line and the byte offset of the first byte
    that is not UTF-8; read in chunks, so a corpus of any size is checked in constant memory."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    consumed, newlines = 0, 0
    with open(path, "rb") as f:
        while True:
            chunk = f.read(CHUNK)
            pending = len(decoder.getstate()[0])  # bytes of a character split by the previous chunk's end
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as e:
                start = max(e.start - pending, 0)  # in chunk
                offset = consumed - pending + e.start
                bad = (e.object[e.start:e.start + 1] or b"?")[0]
                line = newlines + chunk.count(b"\n", 0, start) + 1
                where = f" ({what})" if what else ""
                raise NotUtf8Error(f"{path}{where}, line {line}: not UTF-8 text (byte 0x{bad:02x} at byte offset "
                                   f"{offset}: {e.reason}); convert it to UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)") from None
            if not chunk:
                return
            consumed += len(chunk)
            newlines += chunk.count(b"\n")


def read_utf8(path: str, what: str = "") -> str:
    """The text of ``path`` as ``open(path, encoding="utf-8").read()`` gives it (universal newlines); a byte that is not
    UTF-8 raises :class:`NotUtf8Error` (see :func:`check_utf8`)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError:
        check_utf8(path, what)  # names the line and the byte
        raise  # not reached: check_utf8 raised on the same bytes
