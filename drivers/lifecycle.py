"""The async context manager every driver and simulator is.

``async with thing:`` opens it and closes it on the way out, whatever happens
inside; subclasses say what opening and closing mean.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class AsyncResource(ABC):
    """``async with`` calls :meth:`open`, then :meth:`close` on the way out."""

    @abstractmethod
    async def open(self) -> None:
        """Make the resource ready."""

    @abstractmethod
    async def close(self) -> None:
        """Release everything ``open`` (or use) took; safe to call more than once."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
