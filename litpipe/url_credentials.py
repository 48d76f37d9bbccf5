"""Credentials written into a URL's user info (`http://user:password@host/v1`): sent as the HTTP
basic auth they stand for, and shown with the password as *** wherever a URL is stored."""

from __future__ import annotations

import base64
import re
from urllib.parse import unquote, urlsplit, urlunsplit

# `scheme://user:password@` or `scheme://token@`: the user info runs to the netloc's last `@`
# (as urlsplit reads it), never past the path.
_USER_INFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user_info>[^/?#\s]+)@")


def hide_credentials(text: str) -> str:
    """`text` with the password in every URL's user info replaced by *** (`user:***@`), or
    the whole user info where it has no password (a user name alone is often a token)."""

    def hidden(match: re.Match[str]) -> str:
        user, has_password, _ = match["user_info"].partition(":")
        return f"{match['scheme']}{f'{user}:***' if has_password else '***'}@"

    return _USER_INFO.sub(hidden, text)


def holds_credentials(url: str) -> bool:
    """Whether `url` has user info (a user name, with a password or not)."""
    return _USER_INFO.match(url) is not None


def split_basic_auth(url: str) -> tuple[str, str | None]:
    """The URL without its user info, and the `Authorization` header its user info stands for
    (None without one). An HTTP client given the header needs no credentials in the URL: aiohttp,
    beneath litellm's async calls, refuses a URL holding them beside the provider's own
    `Authorization` header."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    user_pass = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    host = parts.netloc.rpartition("@")[2]
    header = "Basic " + base64.b64encode(user_pass.encode()).decode("ascii")
    return urlunsplit(parts._replace(netloc=host)), header
