"""The web apps discovered while the gateway runs, found again by site, API origin or claimed app id.

A web app is keyed by its site (the origin its descriptor was fetched from): that is who it is. It is
also found by the origin of its `base_url` (seed 004: discover `notion.com`, then run with app
`https://api.notion.com`) and by the app id its descriptor claims, which two sites may both claim.
"""

from __future__ import annotations

import re

from aai_gateway.discovery.sites import Site, parse_site, url_site
from aai_gateway.discovery.wellknown import WebApp
from aai_gateway.errors import InvalidParams

_HAS_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


class WebApps:
    def __init__(self) -> None:
        self._by_site: dict[str, WebApp] = {}

    def add(self, app: WebApp) -> None:
        """Remember (or refresh) the app of `app.site`."""
        self._by_site[app.site.origin] = app

    def all(self) -> list[WebApp]:
        return list(self._by_site.values())

    def lookup(self, text: str) -> WebApp | None:
        """The app a URL or host names; a host without a scheme matches an https site, else an http one."""
        candidates = [text] if _HAS_SCHEME.match(text.strip()) else [text, "http://" + text.strip()]
        for candidate in candidates:
            try:
                found = self.by_site(parse_site(candidate))
            except InvalidParams:
                return None
            if found is not None:
                return found
        return None

    def by_site(self, site: Site) -> WebApp | None:
        """The app fetched from `site`, else the one whose `base_url` is on `site`'s origin."""
        found = self._by_site.get(site.origin)
        if found is not None:
            return found
        for app in reversed(self._by_site.values()):
            base = url_site(str(app.descriptor.bindings["web"].options.get("base_url", "")))
            if base == site:
                return app
        return None

    def by_id(self, app_id: str) -> list[WebApp]:
        """Every discovered app claiming `app_id` (more than one means the id alone is ambiguous)."""
        return [a for a in self._by_site.values() if a.descriptor.app_id == app_id]

    def site_of(self, descriptor: object) -> Site | None:
        """The site a descriptor served by this index was fetched from."""
        return next((a.site for a in self._by_site.values() if a.descriptor is descriptor), None)
