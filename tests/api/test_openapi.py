"""openapi.json: every route of the app is documented, and real responses validate against it."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from apiclient import with_client
from readside_data import LADDER, Seeded, seed
from stream.api.app import OPENAPI_PATH, create_app
from stream.settings import Settings

DOC = json.loads(OPENAPI_PATH.read_text())
METHODS = {"get", "post", "put", "delete", "patch", "head", "options"}


def app_routes() -> set[tuple[str, str]]:
    import redis.asyncio as aioredis
    app = create_app(aioredis.Redis(), Settings())
    out = set()
    for route in app.router.routes():
        resource = route.resource
        if resource is None or isinstance(resource, web.StaticResource) or route.method == "HEAD":
            continue  # /static/* files and aiohttp's implicit HEAD routes
        out.add((resource.canonical, route.method.lower()))
    return out


def documented() -> set[tuple[str, str]]:
    return {(path, m) for path, item in DOC["paths"].items() for m in item if m in METHODS}


def test_openapi_document_shape() -> None:
    assert DOC["openapi"].startswith("3.1")
    jsonschema.Draft202012Validator.check_schema({"$defs": DOC["components"]["schemas"]})


def test_every_route_is_documented_and_nothing_else() -> None:
    assert app_routes() == documented()


def response_schema(path: str, method: str, status: int) -> dict[str, Any]:
    response = DOC["paths"][path][method]["responses"][str(status)]
    if "$ref" in response:
        response = DOC["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    return response["content"]["application/json"]["schema"]  # type: ignore[no-any-return]


def check(path_template: str, method: str, status: int, body: Any) -> None:
    schema = {**response_schema(path_template, method, status), "components": DOC["components"]}
    jsonschema.Draft202012Validator(schema).validate(body)


REQUESTS = [
    ("/health", "get", "/health", None, 200),
    ("/openapi.json", "get", "/openapi.json", None, 200),
    ("/api/ladders", "get", "/api/ladders", None, 200),
    ("/api/ladders/{ladder}", "get", f"/api/ladders/{LADDER}", None, 200),
    ("/api/ladders/{ladder}", "get", "/api/ladders/nope", None, 404),
    ("/api/ladders/{ladder}/leaderboard", "get", f"/api/ladders/{LADDER}/leaderboard?limit=5", None, 200),
    ("/api/ladders/{ladder}/leaderboard", "get", f"/api/ladders/{LADDER}/leaderboard?search=p1", None, 200),
    ("/api/ladders/{ladder}/leaderboard", "get", f"/api/ladders/{LADDER}/leaderboard?eligible=true&limit=3", None, 200),
    ("/api/ladders/{ladder}/leaderboard", "get", f"/api/ladders/{LADDER}/leaderboard?limit=0", None, 400),
    ("/api/ladders/{ladder}/distribution", "get", f"/api/ladders/{LADDER}/distribution?bins=7", None, 200),
    ("/api/ladders/{ladder}/distribution", "get", f"/api/ladders/{LADDER}/distribution?bins=0", None, 400),
    ("/api/ladders/{ladder}/activity", "get", f"/api/ladders/{LADDER}/activity?points=3", None, 200),
    ("/api/ladders/{ladder}/activity", "get", "/api/ladders/nope/activity", None, 404),
    ("/api/ladders/{ladder}/activity", "get", f"/api/ladders/{LADDER}/activity?points=0", None, 400),
    ("/api/ladders/{ladder}/players/{player}", "get", f"/api/ladders/{LADDER}/players/p01", None, 200),
    ("/api/ladders/{ladder}/players/{player}/ranks", "get", f"/api/ladders/{LADDER}/players/p01/ranks", None, 200),
    ("/api/ladders/{ladder}/players/{player}/ranks", "get", f"/api/ladders/{LADDER}/players/nobody/ranks", None, 404),
    ("/api/ladders/{ladder}/player/ranks", "get", f"/api/ladders/{LADDER}/player/ranks?id=p02&history=2", None, 200),
    ("/api/ladders/{ladder}/player/ranks", "get", f"/api/ladders/{LADDER}/player/ranks", None, 400),
    ("/api/ladders/{ladder}/players/{player}", "get", f"/api/ladders/{LADDER}/players/nobody", None, 404),
    ("/api/ladders/{ladder}/player", "get", f"/api/ladders/{LADDER}/player?id=p01&history=2", None, 200),
    ("/api/ladders/{ladder}/player", "get", f"/api/ladders/{LADDER}/player?id=..", None, 404),
    ("/api/ladders/{ladder}/player", "get", f"/api/ladders/{LADDER}/player", None, 400),
    ("/api/ladders/{ladder}/rounds", "get", f"/api/ladders/{LADDER}/rounds", None, 200),
    ("/api/ladders/{ladder}/rounds/{round_id}", "get", f"/api/ladders/{LADDER}/rounds/r3", None, 200),
    ("/api/ladders/{ladder}/rounds/{round_id}", "get", f"/api/ladders/{LADDER}/rounds/zz", None, 404),
    ("/api/ladders/{ladder}/round", "get", f"/api/ladders/{LADDER}/round?id=r3", None, 200),
    ("/api/ladders/{ladder}/round", "get", f"/api/ladders/{LADDER}/round?id=r%2F3", None, 404),
    ("/api/ladders/{ladder}/predict", "get", f"/api/ladders/{LADDER}/predict?players=p01,p02,p03", None, 200),
    ("/api/ladders/{ladder}/predict", "post", f"/api/ladders/{LADDER}/predict", {"players": ["p01", "new"]}, 200),
    ("/api/ladders/{ladder}/predict", "post", f"/api/ladders/{LADDER}/predict", {"players": ["p01"]}, 400),
    ("/api/ladders/{ladder}/predict", "get", f"/api/ladders/{LADDER}/predict?teams=p01,p02;p03&draw_margin=10", None,
     200),
    ("/api/ladders/{ladder}/predict", "post", f"/api/ladders/{LADDER}/predict",
     {"teams": [["p01", {"player": "p02", "weight": 0.5}], ["new"]]}, 200),
    ("/api/ladders/{ladder}/predict", "post", f"/api/ladders/{LADDER}/predict", {"teams": [["p01"], []]}, 400),
    ("/api/ladders/{ladder}/what-if", "post", f"/api/ladders/{LADDER}/what-if",
     {"standings": [{"player": "new-a", "rank": 1}, {"player": "new-b", "rank": 2}], "explain_for": ["new-b"]}, 200),
    ("/api/ladders/{ladder}/what-if", "post", f"/api/ladders/{LADDER}/what-if", {"standings": []}, 400),
    ("/api/ladders/{ladder}/what-if", "post", "/api/ladders/nope/what-if", {"standings": []}, 404),
    ("/api/ladders/{ladder}/players/{player}/changes/{round_id}/explain", "get",
     f"/api/ladders/{LADDER}/players/p01/changes/r1/explain", None, 200),
    ("/api/ladders/{ladder}/players/{player}/changes/{round_id}/explain", "get",
     f"/api/ladders/{LADDER}/players/p01/changes/zz/explain", None, 404),
]


def test_real_responses_validate(redis_url: str) -> None:
    seed(redis_url)

    async def body(client: TestClient) -> list[tuple[str, str, int, Any]]:
        out = []
        for template, method, url, payload, _ in REQUESTS:
            resp = await (client.post(url, json=payload) if method == "post" else client.get(url))
            out.append((template, method, resp.status, await resp.json()))
        return out

    results = with_client(redis_url, body)
    assert [status for *_, status, _ in results] == [r[-1] for r in REQUESTS]
    for template, method, status, payload in results:
        check(template, method, status, payload)
    # the validation itself can fail: a wrong body is rejected
    with pytest.raises(jsonschema.ValidationError):
        check("/api/ladders/{ladder}/players/{player}", "get", 200, {"player": "x"})


def test_path_parameters_are_declared() -> None:
    for path, item in DOC["paths"].items():
        names = set(re.findall(r"{(\w+)}", path))
        declared = set()
        for p in item.get("parameters", []):
            p = DOC["components"]["parameters"][p["$ref"].rsplit("/", 1)[1]] if "$ref" in p else p
            if p["in"] == "path":
                declared.add(p["name"])
        assert names == declared, path
