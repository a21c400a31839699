"""HttpClient.fetch_json: a plain JSON request with the same error mapping, timeouts and
cancellation as a streamed one."""

from __future__ import annotations

import asyncio

import pytest

from codecompanion_py.client import HttpClient, HttpRequest
from codecompanion_py.demo.server import Reply, ScriptedServer, json_reply
from codecompanion_py.errors import AdapterError, AuthenticationError, HTTPStatusError, RequestTimeout, TransportError


def get(url: str, **options) -> HttpRequest:
    return HttpRequest(url=url, body=b"", method="GET", stream=False, provider="Example", **options)


async def fetch(responder, path: str = "/thing", **options):
    server = ScriptedServer(responder)
    await server.start()
    client = HttpClient()
    try:
        return await client.fetch_json(get(server.url + path, **options)), server
    finally:
        await client.aclose()
        await server.close()


async def test_the_answer_is_decoded():
    data, server = await fetch(lambda request: json_reply({"data": [{"id": "m"}]}))
    assert data == {"data": [{"id": "m"}]}
    assert server.requests[0].method == "GET" and server.requests[0].path == "/thing"


async def test_a_body_that_is_not_json_is_an_adapter_error():
    with pytest.raises(AdapterError, match="Example: the answer is not JSON"):
        await fetch(lambda request: Reply(headers={"content-type": "text/html"}, chunks=[b"<html>"]))


async def test_error_statuses_are_mapped_and_the_credential_is_kept_out():
    secret = "Bearer gho_secret_value_0123456789"

    def echo(request):
        return json_reply({"message": f"bad credentials: {request.headers['authorization']}"}, status=401)

    with pytest.raises(AuthenticationError) as refused:
        await fetch(echo, headers={"Authorization": secret}, auth_hint="the login")
    assert refused.value.status == 401 and "check the login" in str(refused.value)
    assert "gho_secret_value" not in str(refused.value)
    with pytest.raises(HTTPStatusError) as missing:
        await fetch(lambda request: json_reply({"error": {"message": "no such thing"}}, status=404))
    assert missing.value.status == 404 and "no such thing" in str(missing.value)


async def test_a_request_can_wait_less_than_the_client():
    async def silent(request):
        await asyncio.sleep(5)
        return json_reply({})

    with pytest.raises(RequestTimeout, match="Example: no data from the server for 0.2s"):
        await fetch(silent, read_timeout=0.2)


async def test_no_server_is_a_transport_error():
    client = HttpClient()
    try:
        with pytest.raises(TransportError, match="Example: cannot connect"):
            await client.fetch_json(get("http://127.0.0.1:9/thing"))
    finally:
        await client.aclose()
