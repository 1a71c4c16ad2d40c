"""Files and objects under one name: local paths, and fsspec URLs (``s3://bucket/prefix/...``).

A name with a scheme (``s3://``, ``gs://``, ``memory://``...) is an object in storage reached
through fsspec and the protocol's package (``aer1[s3]`` brings s3fs); any other name is a
local path and never comes here. Credentials and endpoints come as fsspec gets them from
the environment (AWS variables, config files) or from :func:`use_options` (the commands'
``--storage-options``); they are passed to fsspec and never put in a message.

An object is written whole: storage shows the new object or the old one, never a torn
one. Conditional writes (create only if absent; replace only if unchanged since read) are
what two writers of one log rely on: S3 gives them (If-None-Match, If-Match); a protocol
without them is refused for the log, never written as if it had them.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import IO, Any

from ._limits import MAX_STORAGE_OPTIONS_BYTES
from .errors import StorageError

__all__ = [
    "CHUNK",
    "StorageConflict",
    "chunks",
    "conditional",
    "copy_out",
    "delete",
    "etag",
    "exists",
    "find",
    "find_any",
    "is_url",
    "join",
    "names_in",
    "open_write",
    "parse_options",
    "read_bounded",
    "require_place",
    "use_options",
    "write",
]

#: Bytes read or written per request of a streamed copy.
CHUNK = 8 * 1024 * 1024
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
#: Protocols whose conditional writes aer1 knows (S3's If-None-Match and If-Match on PUT).
_CONDITIONAL = frozenset({"s3", "s3a"})
_options: dict[str, Any] = {}


class StorageConflict(StorageError):
    """A conditional write was refused: the object exists, or changed since it was read."""


def is_url(name: object) -> bool:
    """True when ``name`` is a string with a scheme (``s3://...``): an object in storage."""
    return isinstance(name, str) and _SCHEME.match(name) is not None


def join(base: str, *parts: str) -> str:
    """``base/part/...`` for a URL (a path never has its ``//`` folded as ``pathlib`` would)."""
    return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts)])


def parse_options(text: str) -> dict[str, Any]:
    """``--storage-options``: a JSON object of fsspec keyword arguments (endpoint, profile, ...)."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_STORAGE_OPTIONS_BYTES:
        raise StorageError(f"--storage-options: more than {MAX_STORAGE_OPTIONS_BYTES} bytes")
    import orjson  # only a command given --storage-options parses JSON here

    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise StorageError(f"--storage-options: not JSON: {e}") from e
    if not isinstance(value, dict):
        raise StorageError(f"--storage-options: want a JSON object, got {type(value).__name__}")
    return value


def use_options(options: dict[str, Any]) -> None:
    """The fsspec options every later storage call of this process uses (``--storage-options``)."""
    _options.clear()
    _options.update(options)


def options() -> dict[str, Any]:
    """A copy of the options in use (shipped to Dask workers as data)."""
    return dict(_options)


def _scheme(url: str) -> str:
    m = _SCHEME.match(url)
    return m.group(1).lower() if m else ""


def require_place(url: str) -> None:
    """StorageError unless ``url`` names a bucket or folder after its scheme (``s3://`` alone names none)."""
    if not url[len(_scheme(url)) + 3:].strip("/"):
        raise StorageError(f"{url}: names no bucket or folder")


def _fs(url: str) -> tuple[Any, str]:
    """(the fsspec filesystem, the path within it) for ``url``; StorageError in one line."""
    scheme = _scheme(url)
    require_place(url)
    try:
        import fsspec  # type: ignore[import-untyped,unused-ignore]
    except ImportError as e:
        raise StorageError(f"{scheme}:// needs fsspec: pip install 'aer1[s3]'") from e
    try:
        fs, path = fsspec.core.url_to_fs(url, **_options)
        return fs, str(path)
    except ImportError as e:
        hint = "pip install 'aer1[s3]'" if scheme in _CONDITIONAL else f"install fsspec's package for {scheme}://"
        raise StorageError(f"{scheme}:// is not available here ({hint})") from e
    except (ValueError, TypeError, KeyError) as e:  # unknown protocol, options it does not take
        raise StorageError(f"{scheme}://: cannot open storage: {type(e).__name__}: {e}") from e
    except OSError as e:  # a filesystem that connects when made (ftp://, sftp://): host unknown, refused
        raise StorageError(f"{url}: cannot open storage: {_why(e)}") from e


def _why(e: BaseException) -> str:
    """A storage failure in words, without the request (which can name credentials)."""
    if isinstance(e, FileNotFoundError):
        return "not found (no such object or bucket)"
    if isinstance(e, PermissionError):
        return "access denied"
    text = (e.strerror if isinstance(e, OSError) and e.strerror else str(e)).split("\n")[0] or type(e).__name__
    return text[:300]


def _not_found(e: FileNotFoundError) -> bool:
    """True unless ``e`` stands for another failure: fsspec's HTTP reader calls a refused connection or an
    HTTP 500 "not found", with the real failure as its cause (an HTTP 404 or 410 is one; so is S3's NoSuchKey)."""
    cause = e.__cause__
    if cause is None or isinstance(cause, FileNotFoundError):
        return True
    status = getattr(cause, "status", None)
    if isinstance(status, int):
        return status in (404, 410)
    return not isinstance(cause, OSError)


def _precondition(e: BaseException) -> bool:
    """True when ``e`` is storage refusing a conditional write (HTTP 412, or the object exists)."""
    if isinstance(e, FileExistsError):
        return True
    cause = e.__cause__ or e.__context__
    response = getattr(cause, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    return code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


@contextlib.contextmanager
def _failing(url: str) -> Iterator[None]:
    """Storage errors as StorageError (FileNotFoundError kept: callers tell a missing object apart)."""
    try:
        yield
    except StorageError:
        raise
    except FileNotFoundError as e:
        if _not_found(e):
            raise
        raise StorageError(f"{url}: {_why(e.__cause__ or e)}") from e
    except Exception as e:  # s3fs, botocore and aiohttp raise many kinds; each is one line here
        if _precondition(e):
            raise StorageConflict(f"{url}: the conditional write was refused") from e
        raise StorageError(f"{url}: {_why(e)}") from e


def read_bounded(url: str, limit: int) -> bytes:
    """The object's bytes, at most ``limit`` (FileNotFoundError when it is missing)."""
    fs, path = _fs(url)
    with _failing(url), fs.open(path, "rb") as f:
        data: bytes = f.read(limit + 1)
    if len(data) > limit:
        raise StorageError(f"{url}: more than {limit} bytes")
    return data


def chunks(url: str, limit: int) -> Iterator[bytes]:
    """The object's bytes in chunks, at most ``limit`` + 1 of them (the reader then names the limit).

    One ranged GET per chunk: a small object (most receipts) or a missing one costs one request.
    """
    fs, path = _fs(url)
    done = 0
    with _failing(url):
        while done <= limit:
            if done and fs.size(path) == done:  # the object ended on a chunk's edge: no range is left
                return
            try:
                chunk: bytes = fs.cat_file(path, start=done, end=done + min(CHUNK, limit + 1 - done))
            except OSError:
                if done == 0 and _empty(fs, path):  # no range of an empty object
                    return
                raise
            done += len(chunk)
            yield chunk
            if len(chunk) < CHUNK:
                return


def _empty(fs: Any, path: str) -> bool:
    try:
        return int(fs.size(path)) == 0
    except Exception:  # the first failure is the one to report
        return False


def copy_out(url: str, out: IO[bytes], limit: int) -> int:
    """Copy the object into ``out``, at most ``limit`` + 1 bytes; the bytes copied."""
    done = 0
    for chunk in chunks(url, limit):
        out.write(chunk)
        done += len(chunk)
    return done


def exists(url: str) -> bool:
    """True when the object exists (asked of storage now, not of a listing cached earlier)."""
    return etag(url) is not None


def etag(url: str) -> str | None:
    """The object's ETag (its version, for a replace-if-unchanged), or None when it is missing."""
    fs, path = _fs(url)
    try:
        with _failing(url):
            info = fs.info(path, refresh=True) if "refresh" in _info_args(fs) else fs.info(path)
    except FileNotFoundError:
        return None
    tag = info.get("ETag") or info.get("etag") or info.get("mtime") or info.get("size")
    return None if tag is None else str(tag)


def _info_args(fs: Any) -> tuple[str, ...]:
    import inspect

    try:
        return tuple(inspect.signature(fs.info).parameters)
    except (TypeError, ValueError):
        return ()


def write(url: str, data: bytes, *, create: bool = False, if_match: str | None = None) -> str | None:
    """Write the object whole; its new ETag when storage gives one.

    ``create``: only if absent; ``if_match``: only if its ETag is still that. A refused
    condition is :class:`StorageConflict`; a protocol that cannot make the condition atomic is
    refused (StorageError) before anything is written.
    """
    fs, path = _fs(url)
    if create or if_match is not None:
        if _scheme(url) not in _CONDITIONAL:
            raise StorageError(f"{url}: {_scheme(url)}:// gives no conditional writes "
                               "(a log in storage needs them: use s3:// or a local folder)")
        with _failing(url):
            if create:
                out = fs.pipe_file(path, data, mode="create")
            else:
                out = fs.pipe_file(path, data, IfMatch=if_match)
    else:
        with _failing(url):
            out = fs.pipe_file(path, data)
    tag = out.get("ETag") if isinstance(out, dict) else None
    return None if tag is None else str(tag)


def open_write(url: str) -> Any:
    """A file object writing the object; it appears whole when the file closes (a context manager)."""
    fs, path = _fs(url)
    with _failing(url):
        return _Closing(fs.open(path, "wb", block_size=max(CHUNK, 5 * 1024 * 1024)), url)


class _Closing:
    """A storage file whose failures, at any write or at close, are StorageError."""

    def __init__(self, f: Any, url: str) -> None:
        self._f, self._url = f, url

    def write(self, data: bytes) -> int:
        with _failing(self._url):
            return int(self._f.write(data))

    def __enter__(self) -> _Closing:
        return self

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        if kind is not None:
            with contextlib.suppress(Exception):
                self._f.discard() if hasattr(self._f, "discard") else None
            return
        with _failing(self._url):
            self._f.close()


def delete(url: str, *, if_match: str | None = None) -> None:
    """Remove the object (a missing one is no error); ``if_match``: only while its ETag is that."""
    fs, path = _fs(url)
    try:
        with _failing(url):
            if if_match is not None and _scheme(url) in _CONDITIONAL:
                bucket, key, _ = fs.split_path(path)
                fs.call_s3("delete_object", Bucket=bucket, Key=key, IfMatch=if_match)
                fs.invalidate_cache(path)
            else:
                fs.rm_file(path)
    except FileNotFoundError:
        return


def conditional(url: str) -> bool:
    """True when ``url``'s protocol gives the conditional writes a log needs (S3)."""
    return _scheme(url) in _CONDITIONAL


def find_any(url: str) -> bool:
    """True when any object is under the prefix ``url`` (a bucket that does not exist: StorageError)."""
    fs, path = _fs(url)
    with _failing(url):
        bucket = path.split("/", 1)[0]
        if not fs.exists(bucket):
            raise StorageError(f"{url}: no such bucket")
        return bool(fs.find(path.rstrip("/"), maxdepth=None, detail=False))


def names_in(url: str) -> frozenset[str]:
    """The URLs of the objects directly under the prefix ``url`` (one listing request per thousand)."""
    fs, path = _fs(url)
    with _failing(url):
        try:
            names = fs.ls(path.rstrip("/"), detail=False, refresh=True)
        except FileNotFoundError:
            return frozenset()
    return frozenset(fs.unstrip_protocol(n) for n in names)


def _walk_order(name: str, base: str) -> tuple[tuple[int, str], ...]:
    """The order a walk of a local folder gives: a folder's files (sorted), then each subfolder in turn."""
    parts = name[len(base):].split("/") if name.startswith(base) else [name]
    return (*((1, p) for p in parts[:-1]), (0, parts[-1]))


def find(url: str, keep: Callable[[str], bool], limit: int) -> list[str]:
    """The URLs under ``url`` (a prefix) whose names ``keep`` takes, sorted; StorageError past ``limit``.

    A bucket that does not exist, or that refuses to list, is a StorageError naming it.
    """
    fs, path = _fs(url)
    try:
        with _failing(url):
            if not fs.exists(path):
                raise FileNotFoundError(url)
            names = fs.find(path.rstrip("/"), detail=False)
    except FileNotFoundError as e:
        raise StorageError(f"{url}: not found (no such bucket or prefix)") from e
    base = path.rstrip("/") + "/"
    out = [fs.unstrip_protocol(n) for n in sorted((n for n in names if keep(n)), key=lambda n: _walk_order(n, base))]
    if len(out) > limit:
        raise StorageError(f"{url}: more than {limit} files to verify")
    return out
