"""The engine's snapshot stores, one per worktree, found from a chat's folder."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..errors import SnapshotError
from .git import GitStore, open_store


class Stores:
    def __init__(self, data_dir: Callable[[], str | None]) -> None:
        self._data_dir = data_dir  # the config's `data_dir` (stdpath("data")/codecompanion_py), read each time
        self._found: dict[str, GitStore | SnapshotError] = {}

    def folder(self) -> Path:
        """Where indexes and shadow repositories live."""
        base = self._data_dir() or os.path.join(tempfile.gettempdir(), "codecompanion_py")
        return Path(base) / "snapshots"

    async def for_folder(self, cwd: str | os.PathLike[str]) -> GitStore:
        """The store for `cwd`'s worktree; a folder that cannot have one raises the same
        SnapshotError each time (it is found once)."""
        key = os.path.realpath(cwd)
        found = self._found.get(key)
        if found is None:
            try:
                found = await open_store(key, self.folder())
                # one store a worktree, from whichever of its folders: they share one index
                found = next(
                    (s for s in self._found.values() if isinstance(s, GitStore) and s.index == found.index), found
                )
            except SnapshotError as error:
                found = error
            self._found[key] = found
        if isinstance(found, SnapshotError):
            raise found
        return found
