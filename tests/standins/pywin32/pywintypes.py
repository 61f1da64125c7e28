"""Stand-in for pywin32's `pywintypes`: the COM error and the date type."""

from __future__ import annotations

import datetime
from typing import Any

TimeType = datetime.datetime

ExcepInfo = tuple[int, str | None, str | None, str | None, int, int]
"""(wcode, source, description, helpfile, helpcontext, scode)"""


class com_error(Exception):  # noqa: N801 - pywin32's name
    """Raised with args (hresult, strerror, excepinfo, argerror); the HRESULT is a signed 32-bit int."""

    def __init__(self, hresult: int, strerror: str | None, excepinfo: ExcepInfo | None, argerror: int | None) -> None:
        super().__init__(hresult, strerror, excepinfo, argerror)
        self.hresult = hresult
        self.strerror = strerror
        self.excepinfo = excepinfo
        self.argerror = argerror

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self.args)
