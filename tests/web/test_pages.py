"""What the UI's pages say, through the Starlette test client: descriptor warnings, the settings table."""

from __future__ import annotations

import json
from html import unescape

from aai_gateway.web import UI_PATH
from tests.support import EXAMPLES
from tests.web.ui_support import Ui


def test_the_apps_page_lists_an_unknown_key_as_a_warning(ui: Ui) -> None:
    doc = json.loads((EXAMPLES / "io.mpv" / "aai.json").read_text())
    doc["platforms"]["linux"]["tools"][0]["timeut"] = 5
    target = ui.gateway.settings.scan_paths[0] / "io.mpv" / "aai.json"
    target.parent.mkdir()
    target.write_text(json.dumps(doc))
    assert "io.mpv" in ui.gateway.rescan()
    ui.login()
    page = unescape(ui.client.get(f"{UI_PATH}/apps").text)
    assert "1 warning" in page
    assert f"{target}#/platforms/linux/tools/0/timeut</code>: unknown key 'timeut' (did you mean 'timeout'?)" in page
    app = unescape(ui.client.get(f"{UI_PATH}/apps/io.mpv").text)
    assert "unknown key 'timeut' (did you mean 'timeout'?)" in app
