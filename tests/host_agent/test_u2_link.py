"""Replies of a uiautomator2 server as the kept-alive link reads them: every framing HTTP/1.1 allows, and the
malformed or oversized ones refused (a socket pair stands for the adb stream; the phone side writes raw bytes)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.client import RemoteDisconnected

import pytest
from uiautomator2.exceptions import HTTPError, RPCInvalidError, RPCUnknownError, UiAutomationNotConnectedError

from host_agent import u2_link
from host_agent.u2_link import _result, _Stream


@pytest.fixture
def pair() -> Iterator[tuple[_Stream, socket.socket]]:
    ours, phone = socket.socketpair()
    ours.settimeout(10)
    yield _Stream(ours), phone
    ours.close()
    phone.close()


def _answer(phone: socket.socket, reply: bytes, *, close: bool = False) -> threading.Thread:
    """The phone side: read the request, write `reply` in small pieces (replies arrive split), maybe close."""

    def run() -> None:
        phone.recv(65536)
        piece = 7 if len(reply) < 4096 else 4096
        try:
            for i in range(0, len(reply), piece):
                phone.sendall(reply[i:i + piece])
            if close:
                phone.shutdown(socket.SHUT_WR)
        except OSError:  # the reader gave up on the reply and closed its end
            pass

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_reply_with_a_length_then_another_on_the_same_stream(pair: tuple[_Stream, socket.socket]) -> None:
    stream, phone = pair
    body = '{"result": "ü<node/>😀"}'.encode()
    two = (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)) * 2
    # Both replies written at once: the second stays buffered for the second request.
    thread = _answer(phone, two)
    first = stream.exchange(b"POST / HTTP/1.1\r\n\r\n")
    thread.join()
    assert first == u2_link.HttpReply(200, "OK", body, False)
    phone_reader = threading.Thread(target=phone.recv, args=(65536,))
    phone_reader.start()
    assert stream.exchange(b"POST / HTTP/1.1\r\n\r\n") == first
    phone_reader.join()


def test_a_chunked_reply_with_trailers_and_a_closing_one(pair: tuple[_Stream, socket.socket]) -> None:
    stream, phone = pair
    reply = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
             b"5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: 1\r\n\r\n")
    thread = _answer(phone, reply)
    got = stream.exchange(b"POST / HTTP/1.1\r\n\r\n")
    thread.join()
    assert got == u2_link.HttpReply(200, "OK", b"hello world", True)


def test_a_reply_without_length_ends_with_the_stream(pair: tuple[_Stream, socket.socket]) -> None:
    stream, phone = pair
    thread = _answer(phone, b"HTTP/1.0 500 Server Error\r\n\r\npartial body", close=True)
    got = stream.exchange(b"POST / HTTP/1.1\r\n\r\n")
    thread.join()
    assert got == u2_link.HttpReply(500, "Server Error", b"partial body", True)


@pytest.mark.parametrize(("reply", "error", "match"), [
    (b"SSH-2.0-OpenSSH\r\n\r\n", HTTPError, "not an HTTP reply"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", HTTPError, "not in 0.."),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", HTTPError, "not in 0.."),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", HTTPError, "bad chunk size"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", RemoteDisconnected, "mid-reply"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70000, HTTPError, "first 65536 bytes"),
])
def test_malformed_or_cut_replies_are_errors_not_hangs(pair: tuple[_Stream, socket.socket], reply: bytes,
                                                        error: type[Exception], match: str) -> None:
    stream, phone = pair
    thread = _answer(phone, reply, close=True)
    with pytest.raises(error, match=match):
        stream.exchange(b"POST / HTTP/1.1\r\n\r\n")
    stream.close()  # as the link does after a failed exchange
    thread.join()


def test_a_chunked_reply_over_the_cap_is_refused(pair: tuple[_Stream, socket.socket],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(u2_link, "MAX_REPLY", 8)
    stream, phone = pair
    thread = _answer(phone, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                            b"5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n")
    with pytest.raises(HTTPError, match="over 8 bytes"):
        stream.exchange(b"POST / HTTP/1.1\r\n\r\n")
    thread.join()


@pytest.mark.parametrize(("body", "error", "match"), [
    (b"[1]", RPCInvalidError, "not a dict"),
    (b'{"id": 1}', RPCInvalidError, "no result field"),
    (b'{"error": {"code": -1, "message": "UiAutomation not connected"}}', UiAutomationNotConnectedError,
     "UiAutomation not connected"),
    (b'{"error": {"code": -1, "message": "android.os.DeadObjectException"}}', UiAutomationNotConnectedError,
     "DeadObjectException"),
    (b'{"error": {"code": -32001, "message": "java.lang.IllegalArgumentException", "data": "x"}}', RPCUnknownError,
     "-32001 java.lang.IllegalArgumentException"),
])
def test_error_replies_raise_uiautomator2s_exceptions(body: bytes, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        _result(body, ())
    assert _result(b'{"result": null}', ()) is None
