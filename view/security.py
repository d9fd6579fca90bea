"""Who may read the page: a random token per `fairsweep view` process, presented as the `token` query
parameter once (the page then keeps it in an HttpOnly, SameSite=Strict cookie) and compared in constant
time; a loopback bind also checks the Host header (a DNS-rebinding page has neither token nor cookie,
and its Host names another site). Every answer forbids framing, sniffing, caching and outside loads."""

from __future__ import annotations

import hmac
import ipaddress
import secrets

from aiohttp import web

TOKEN_BYTES = 24
LOOPBACK_NAMES = ("localhost",)
# Nothing the page loads may come from anywhere but this process; inline script is not needed either.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY", "Cache-Control": "no-store", "Cross-Origin-Resource-Policy": "same-origin"}


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def cookie_name(port: int) -> str:
    """Cookies ignore ports: one name per port, so two views on one machine keep their own token."""
    return f"fairsweep_view_{port}"


def token_ok(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def guard(token: str, port: int, check_host: bool):
    """Middleware: 403 for a request without the token (query or cookie) or, on loopback, a foreign Host."""
    allowed_hosts = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}

    @web.middleware
    async def middleware(request: web.Request, handler):
        if request.method not in ("GET", "HEAD"):
            return _with_headers(web.Response(status=405, text="fairsweep view only reads\n"))
        if check_host and request.headers.get("Host", "") not in allowed_hosts:
            return _forbidden("this page answers only to 127.0.0.1 / localhost")
        query_token = request.query.get("token")
        if not (token_ok(query_token, token) or token_ok(request.cookies.get(cookie_name(port)), token)):
            return _forbidden("open the URL `fairsweep view` printed: it carries the token")
        if query_token is not None and request.path == "/":  # keep the token out of the address bar
            response = web.Response(status=302, headers={"Location": "/"})
            response.set_cookie(cookie_name(port), token, httponly=True, samesite="Strict", path="/")
            return _with_headers(response)
        try:
            return _with_headers(await handler(request))
        except web.HTTPException as exc:  # 404 and friends get the same headers
            return _with_headers(web.Response(status=exc.status, text=f"{exc.status} {exc.reason}\n"))

    return middleware


def _forbidden(why: str) -> web.Response:
    return _with_headers(web.Response(status=403, text=f"403 forbidden: {why}\n"))


def _with_headers(response: web.StreamResponse) -> web.StreamResponse:
    response.headers.update(HEADERS)
    return response
