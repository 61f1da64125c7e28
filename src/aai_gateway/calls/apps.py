"""Finding an app and its tool: installed descriptors, then web apps discovered in this run."""

from __future__ import annotations

import difflib
import json
import logging

from aai_gateway.config import Settings
from aai_gateway.descriptor import Binding, Descriptor, Tool
from aai_gateway.descriptor.guide import guide
from aai_gateway.discovery import Registry, scan, wellknown
from aai_gateway.discovery.webapps import WebApps
from aai_gateway.errors import AaiError, AaiJsonInvalid, AppNotFound, ToolNotFound
from aai_gateway.spelling import Spelling, spelling

log = logging.getLogger("aai_gateway.calls")


class Apps:
    """The installed apps (a registry kept by scans) and the web apps `web:discover` found."""

    def __init__(self, settings: Settings, registry: Registry | None = None) -> None:
        self.settings = settings
        self.registry = registry or Registry(scan(settings))
        self.web_apps = WebApps()

    @property
    def platform(self) -> str:
        return self.settings.platform

    @property
    def spelling(self) -> Spelling:
        """The gateway's own tools as they are listed, for every text an agent reads."""
        return spelling(self.settings.tool_names)

    def served(self) -> list[Descriptor]:
        return self.registry.served()

    def rescan(self) -> tuple[set[str], set[str]]:
        """Scan again; the ids of apps added, changed or removed (what clients must be told), and the ids
        served now."""
        before = {a.app_id: a for a in self.served()}
        self.registry.replace(scan(self.settings, self.registry.scan))
        after = {a.app_id: a for a in self.served()}
        changed = {app_id for app_id in before.keys() | after.keys() if _differ(before.get(app_id), after.get(app_id))}
        if changed:
            log.info("apps changed: %s; now serving %s", ", ".join(sorted(changed)), ", ".join(after) or "none")
        return changed, set(after)

    async def discover(self, url: str) -> Descriptor:
        """web:discover: fetch (or take from the cache) the web app at `url` and remember it by its site."""
        found = await wellknown.discover(url, self.settings)
        if self.registry.get(found.descriptor.app_id) is not None:
            log.warning(
                "%s claims app id %s, which an installed app has; it is reachable only as %s",
                found.site.origin,
                found.descriptor.app_id,
                found.site.origin,
            )
        self.web_apps.add(found)
        return found.descriptor

    def app(self, app_id: str) -> Descriptor:
        """An installed app by id, else a discovered web app by id, site URL or host."""
        app = self.registry.get(app_id) or self._web_app(app_id)
        if app is None:
            broken = self.registry.scan.broken.get(app_id)
            if broken:
                more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
                raise AaiJsonInvalid(
                    f"the descriptor of {app_id} is invalid: {broken[0]}{more}; "
                    f"run `aai-gateway validate {broken[0].file}` for every problem"
                )
            raise AppNotFound(self._unknown_app(app_id))
        return app

    async def resolve(self, app_id: str) -> Descriptor:
        """`app`, or, for an http(s) URL not discovered yet in this run, web:discover of it (cache first)."""
        try:
            return self.app(app_id)
        except AppNotFound:
            if not app_id.strip().lower().startswith(("https://", "http://")):
                raise
        return await self.discover(app_id)

    def _web_app(self, text: str) -> Descriptor | None:
        claims = self.web_apps.by_id(text)
        if len(claims) > 1:
            sites = ", ".join(a.site.origin for a in claims)
            raise AppNotFound(f"several web apps claim the id '{text}' ({sites}); name the one meant by its URL")
        if claims:
            return claims[0].descriptor
        found = self.web_apps.lookup(text)
        return found.descriptor if found else None

    def guide_of(self, app: Descriptor) -> str:
        """The operation guide; a discovered web app's examples name it by its site."""
        site = self.web_apps.site_of(app)
        names = self.spelling
        origin = site.origin if site else None
        return guide(app, self.platform, site=origin, exec_name=names.exec, wait_name=names.wait)

    def tool(self, app: Descriptor, app_id: str, tool_name: str) -> tuple[Descriptor, Binding, Tool]:
        """The app's tool on this platform; ToolNotFound lists its tools and the closest name."""
        found = app.find_tool(self.platform, tool_name)
        if found is None:
            names = [t.name for _, t in app.tools(self.platform)]
            close = difflib.get_close_matches(tool_name, names, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ToolNotFound(
                f"{app_id} has no tool '{tool_name}' on {self.platform}; its tools are: "
                f"{', '.join(names) or 'none'}.{hint}"
            )
        return (app, *found)

    def known(self, app_id: str, tool_name: str) -> bool:
        """Whether the app (and the tool, unless "") is one the gateway serves."""
        try:
            app = self.app(app_id)
            if tool_name:
                self.tool(app, app_id, tool_name)
        except AaiError:
            return False
        return True

    def _unknown_app(self, app_id: str) -> str:
        ids = [a.app_id for a in self.served()]
        close = difflib.get_close_matches(app_id, ids, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        known = self.registry.scan.apps.get(app_id)
        if known is not None:
            return f"{app_id} has no binding for {self.platform} or web (it has {', '.join(known.bindings)})."
        web = "" if hint else f" For a web app, call {self.spelling.discover} with its domain or URL first."
        return f"no app '{app_id}' is installed; known apps: {', '.join(ids) or 'none'}.{hint}{web}"


def _differ(before: Descriptor | None, after: Descriptor | None) -> bool:
    """Whether an app changed; an unchanged file keeps its descriptor object, so most need no comparing."""
    if before is after:
        return False
    if before is None or after is None:
        return True
    return _fingerprint(before) != _fingerprint(after)


def _fingerprint(app: Descriptor) -> str:
    return json.dumps(app.to_json(), sort_keys=True, ensure_ascii=False)
