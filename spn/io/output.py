"""Writing output files by one rule: never replace a file without ``force``, never leave one half written.

Every file a command writes (``spn draw -o``, ``spn sweep --out`` and ``--plot``)
goes through here:

- :func:`check_target` refuses, before any work starts, a target that exists
  (unless ``force``), that is not a regular file (``/dev/null``, a folder, a named
  pipe: even ``force`` does not replace those), or whose folder is missing;
- the content is written to a hidden temporary file beside the target
  (:func:`temporary_beside`), which :func:`publish` then moves into place in one
  step: without ``force`` by a hard link that fails if the target appeared in the
  meantime, with ``force`` by a rename over it. A failure on the way removes the
  temporary file and leaves the target as it was.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> with atomic_output(folder / "a.txt", force=False) as file:
...     _ = file.write("first")
>>> with atomic_output(folder / "a.txt", force=False) as file:  # doctest: +ELLIPSIS
...     _ = file.write("second")
Traceback (most recent call last):
...
spn.exceptions.ModelError: ...a.txt: already exists; it is replaced only with --force
>>> (folder / "a.txt").read_text(), sorted(p.name for p in folder.iterdir())
('first', ['a.txt'])
>>> import shutil; shutil.rmtree(folder)
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from spn.exceptions import ModelError

__all__ = ["check_target", "temporary_beside", "publish", "discard", "atomic_output"]


def check_target(path, *, force: bool, flag: str = "--force", what: str = "file") -> Path:
    """``path`` as a :class:`Path` if a new file may be written there; else a one-line :class:`ModelError`.

    ``flag`` names, in the message, the option that allows replacing it.
    """
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise ModelError(f"{path}: cannot write the {what} there ({error.strerror or error})") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise ModelError(f"{path}: is a directory (the {what} is a file)")
        if not stat.S_ISREG(info.st_mode):
            # replacing /dev/null or a named pipe by a regular file would break whatever uses it
            raise ModelError(f"{path}: exists and is not a regular file; spn replaces regular files only")
        if not force:
            raise ModelError(f"{path}: already exists; it is replaced only with {flag}",
                             option=flag.lstrip("-").replace("-", "_"))
    folder = path.parent
    if not folder.is_dir():
        raise ModelError(f"{path}: the folder {folder} does not exist")
    return path


def temporary_beside(path) -> Path:
    """A new, empty, hidden file in the folder of ``path`` (same file system, so that a rename is atomic)."""
    path = Path(path)
    for _ in range(100):
        candidate = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
        try:
            # 0o666 and the umask give the file the permissions any new file would have
            os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        except OSError as error:
            raise ModelError(f"{path}: cannot write in {path.parent} ({error.strerror or error})") from None
        return candidate
    raise ModelError(f"{path}: cannot create a temporary file in {path.parent}")


def publish(temporary, path, *, force: bool, flag: str = "--force") -> Path:
    """Move the complete ``temporary`` file to ``path`` in one step (see the module docstring)."""
    temporary, path = Path(temporary), Path(path)
    try:
        if force:
            check_target(path, force=True, flag=flag)
            os.replace(temporary, path)
            return path
        try:
            os.link(temporary, path)
        except FileExistsError:
            raise ModelError(f"{path}: already exists (it appeared while spn was working); "
                             f"it is replaced only with {flag}", option=flag.lstrip("-").replace("-", "_")) from None
        except OSError as error:
            if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            # a file system without hard links: the check and the rename are two steps there
            check_target(path, force=False, flag=flag)
            os.replace(temporary, path)
            return path
        os.unlink(temporary)
        return path
    except ModelError:
        discard(temporary)
        raise
    except OSError as error:
        discard(temporary)
        raise ModelError(f"{path}: cannot write it ({error.strerror or error})") from None


def discard(temporary) -> None:
    """Remove a temporary file if it is still there."""
    with contextlib.suppress(OSError):
        os.unlink(temporary)


@contextlib.contextmanager
def atomic_output(path, *, force: bool, binary: bool = False, flag: str = "--force"):
    """A file object whose content replaces ``path`` only if the block ends without an exception."""
    path = check_target(path, force=force, flag=flag)
    temporary = temporary_beside(path)
    try:
        with open(temporary, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
    except OSError as error:
        discard(temporary)
        raise ModelError(f"{path}: cannot write it ({error.strerror or error})") from None
    except BaseException:
        discard(temporary)
        raise
    publish(temporary, path, force=force, flag=flag)
