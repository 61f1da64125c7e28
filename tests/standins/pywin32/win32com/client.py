"""Stand-in for `win32com.client`: `Dispatch(progid)` creates an object of the stand-in COM world."""

from __future__ import annotations

from typing import Any

import comapps


def Dispatch(dispatch: str, userName: str | None = None) -> Any:  # noqa: N802, N803 - pywin32's names
    return comapps.create(dispatch)
