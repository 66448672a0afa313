"""The viewer's web application (Starlette, Jinja2 templates shipped with the package).

Pages: the grid (``/``), one record (``/record/{index}``), the statistics (``/stats``)
and the dataset (``/dataset``); pictures and sounds under ``/picture``, ``/waveform``
and ``/audio``. Every route reaches records by split name and index only; nothing a
request says becomes a path. Templates escape every text (autoescape on). Only GET and
HEAD are served, but for the two POSTs that start background work (statistics and a
verify run), which write nothing into the dataset; request targets longer than
:data:`MAX_TARGET` characters and bodies are refused.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from recordkit.errors import RecordkitError
from recordkit.storage import StorageOptions
from recordkit.view._charts import charts
from recordkit.view._jobs import StatsJob, VerifyJob
from recordkit.view._viewer import (
    MAX_PAGE,
    MAX_SCAN,
    MAX_SIDE,
    THUMB_SIDE,
    Cell,
    NotFoundError,
    Viewer,
    Wanted,
    wav,
)

__all__ = ["MAX_TARGET", "PAGE", "create_app"]

#: Records on a grid page unless the request asks for fewer or more (up to MAX_PAGE).
PAGE = 48
#: Longest request target (path and query) served.
MAX_TARGET = 2048

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGI = Callable[[Scope, Receive, Send], Awaitable[None]]


def _bounded(app: ASGI) -> ASGI:
    """Refuse long request targets (414), request bodies (413) and methods other than
    GET, HEAD and POST (405) before any route runs."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            target = len(scope.get("raw_path", b"")) + len(scope.get("query_string", b""))
            headers = dict(scope.get("headers", []))
            status = (
                414
                if target > MAX_TARGET
                else 405
                if scope["method"] not in ("GET", "HEAD", "POST")
                else 413
                if headers.get(b"content-length", b"0") not in (b"0", b"") or b"transfer-encoding" in headers
                else 0
            )
            if status:
                await PlainTextResponse(f"refused ({status})", status_code=status)(scope, receive, send)
                return
        await app(scope, receive, send)

    return guarded


def _int(request: Request, name: str, default: int, low: int = 0, high: int = 2**62) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or len(raw) > 19:
        raise NotFoundError(f"{name} must be a whole number")
    return min(max(int(raw), low), high)


def _number(request: Request, name: str) -> float:
    raw = request.query_params.get(name, "")
    try:
        value = float(raw) if len(raw) <= 40 else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise NotFoundError(f"{name} must be a finite number")
    return value


def _wanted(request: Request) -> Wanted:
    """What a filtered grid shows: ``key``, or the range ``low`` to ``high``."""
    key = request.query_params.get("key")
    if key is not None:
        return key
    return (_number(request, "low"), _number(request, "high"))


def _query(wanted: Wanted) -> str:
    if isinstance(wanted, str):
        return urlencode({"key": wanted})
    return urlencode({"low": repr(wanted[0]), "high": repr(wanted[1])})


def _between(low: float, high: float) -> str:
    return f"{low:g}" if low == high else f"between {low:g} and {high:g}"


def create_app(
    viewer: Viewer, *, cache_dir: Path, storage_options: StorageOptions | None = None, hosts: list[str]
) -> Any:
    """The ASGI application serving ``viewer``; ``hosts``: the Host headers it answers
    (the address it is bound to), so that no other site's page reaches it by DNS."""
    templates = Environment(
        loader=PackageLoader("recordkit.view", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    stats_jobs: dict[str, StatsJob] = {}
    verify = VerifyJob(viewer.location, storage_options)

    def page(name: str, **context: Any) -> HTMLResponse:
        body = templates.get_template(name).render(viewer=viewer, **context)
        return HTMLResponse(body)

    def stats_job(split: str) -> StatsJob:
        if split not in stats_jobs:
            stats_jobs[split] = StatsJob(viewer, split, cache_dir)
        return stats_jobs[split]

    def grid(request: Request) -> HTMLResponse:
        split = viewer.split(request.query_params.get("split"))
        size = viewer.size(split)
        per_page = _int(request, "per_page", PAGE, 1, MAX_PAGE)
        seed = request.query_params.get("seed")
        if seed is not None and (not seed.isdigit() or len(seed) > 9):
            raise NotFoundError("seed must be a whole number")
        field, statistic = request.query_params.get("field"), request.query_params.get("statistic")
        if field is not None and statistic:
            return _filtered(request, split, size, per_page, field, statistic, _wanted(request))
        pages = max(1, math.ceil(size / per_page))
        number = _int(request, "page", 1, 1, pages)
        positions = range((number - 1) * per_page, min(number * per_page, size))
        order = (
            np.random.default_rng(int(seed)).permutation(size)[positions.start : positions.stop].tolist()
            if seed is not None
            else list(positions)
        )
        records = viewer.records(split, order) if order else []
        cells = [viewer.cell(i, r) for i, r in zip(order, records, strict=False)]
        return page(
            "grid.html", split=split, size=size, cells=cells, number=number, pages=pages,
            per_page=per_page, seed=seed, filter=None, next_start=None,
        )  # fmt: skip

    def _filtered(
        request: Request, split: str, size: int, per_page: int, name: str, statistic: str, wanted: Wanted
    ) -> HTMLResponse:
        field = viewer.field(name)
        start = _int(request, "start", 0, 0, size)
        cells: list[Cell] = []
        position, stop = start, min(size, start + MAX_SCAN)
        while position < stop and len(cells) < per_page:
            chunk = list(range(position, min(position + 64, stop)))
            for index, record in zip(chunk, viewer.records(split, chunk), strict=False):
                position = index + 1
                if viewer.matches(record, field, statistic, wanted):
                    cells.append(viewer.cell(index, record))
                    if len(cells) == per_page:
                        break
        return page(
            "grid.html", split=split, size=size, cells=cells, number=None, pages=None, per_page=per_page,
            seed=None, filter={"field": name, "statistic": statistic, "start": start, "query": _query(wanted),
                                "what": wanted if isinstance(wanted, str) else _between(*wanted)},
            next_start=position if position < size else None,
        )  # fmt: skip

    def record(request: Request) -> HTMLResponse:
        split = viewer.split(request.query_params.get("split"))
        index = viewer.index(split, request.path_params["index"])
        value = viewer.record(split, index)
        cell = viewer.cell(index, value, every_field=True)
        sounds = [] if isinstance(value, str) else [n for n in viewer.sounds() if value.get(n) is not None]
        return page(
            "record.html", split=split, index=index, size=viewer.size(split), cell=cell, sounds=sounds
        )

    async def picture(request: Request) -> Response:
        split = viewer.split(request.query_params.get("split"))
        index = request.path_params["index"]
        overlays = request.query_params.get("overlays", "1") != "0"
        side = THUMB_SIDE if request.query_params.get("size") == "thumb" else MAX_SIDE
        data = await run_in_threadpool(viewer.picture, split, index, overlays=overlays, side=side)
        return Response(data, media_type="image/png", headers={"Cache-Control": "max-age=3600"})

    async def audio(request: Request) -> Response:
        split = viewer.split(request.query_params.get("split"))
        samples, rate = await run_in_threadpool(
            viewer.sound, split, request.path_params["index"], request.path_params["field"]
        )
        return Response(wav(samples, rate), media_type="audio/wav")

    async def waveform(request: Request) -> Response:
        split = viewer.split(request.query_params.get("split"))
        data = await run_in_threadpool(
            viewer.waveform, split, request.path_params["index"], request.path_params["field"]
        )
        return Response(data, media_type="image/png")

    def stats(request: Request) -> HTMLResponse:
        split = viewer.split(request.query_params.get("split"))
        job = stats_job(split)
        job.start()
        drawn = charts(job.result, split) if job.result is not None else []
        return page("stats.html", split=split, job=job, charts=drawn)

    def stats_progress(request: Request) -> JSONResponse:
        split = viewer.split(request.query_params.get("split"))
        return JSONResponse(stats_job(split).progress())

    def dataset(request: Request) -> HTMLResponse:
        manifest = viewer.dataset.manifest
        splits = (
            [(name, len(s.shards), sum(sh.records for sh in s.shards), sum(sh.bytes for sh in s.shards))
             for name, s in manifest.splits.items()]
            if manifest is not None
            else []
        )  # fmt: skip
        schema = viewer.dataset.schema.dumps("yaml")
        codecs = manifest.codecs if manifest is not None else {}
        return page(
            "dataset.html", manifest=manifest, splits=splits, schema=schema, codecs=codecs, verify=verify
        )

    def start_verify(request: Request) -> RedirectResponse:
        verify.start()
        return RedirectResponse("/dataset", status_code=303)

    async def not_found(request: Request, exc: Exception) -> Response:
        return PlainTextResponse(f"not found: {exc}", status_code=404)

    async def unreadable(request: Request, exc: Exception) -> Response:
        return PlainTextResponse(f"cannot be read: {exc}", status_code=500)

    routes = [
        Route("/", grid),
        Route("/record/{index:int}", record),
        Route("/picture/{index:int}.png", picture),
        Route("/audio/{index:int}/{field}.wav", audio),
        Route("/waveform/{index:int}/{field}.png", waveform),
        Route("/stats", stats),
        Route("/stats/progress", stats_progress),
        Route("/dataset", dataset),
        Route("/verify", start_verify, methods=["POST"]),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts)],
        exception_handlers={NotFoundError: not_found, RecordkitError: unreadable},
    )
    return _bounded(app)
