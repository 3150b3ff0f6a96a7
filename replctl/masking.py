"""Secrets kept out of everything replctl prints or records: text, JSON, the journal, plans, reports, errors.

A secret is a password in a URL (`postgresql://user:PASSWORD@host/db`), a URL parameter named like a credential
(Spark Connect's `sc://host:15002/;token=TOKEN`, `?password=`), or the value of a Spark setting whose key names a
credential (`fs.s3a.secret.key`, `spark.ssl.keyPassword`). Each is shown as `***`.

Masking the shapes is not enough: a driver or Spark may quote a secret in its own words (an error naming the
setting's value, a password echoed by a server). So the process also remembers the secret values its settings
hold (`remember`, called by the CLI once the settings are resolved) and `mask` replaces them wherever they
appear; every replctl error passes its message and hint through `mask` when it is made.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

MASK = "***"

# Words that make a setting's key or a URL parameter a credential (case-insensitive, anywhere in the name).
SECRET_WORDS = ("secret", "password", "passwd", "token", "key", "credential")

# `scheme://user:password@`: the password is everything between the first colon after `//` and the `@`.
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)(?P<secret>[^@\s/]+)@")
# `;token=...`, `?password=...`, `&sslkey=...` inside a URL: a parameter whose name holds a secret word.
_URL_PARAMETER = re.compile(
    r"(?P<head>[;?&][A-Za-z0-9_.-]*(?:"
    + "|".join(SECRET_WORDS)
    + r")[A-Za-z0-9_.-]*=)(?P<secret>[^;&\s'\"]+)",
    re.IGNORECASE,
)
# Below this length a remembered value would mask ordinary words and numbers throughout the output; such a
# value still disappears wherever it stands in a URL or a credential setting.
_MIN_REMEMBERED = 4

_remembered: set[str] = set()


def is_secret_key(key: str) -> bool:
    """Whether a setting or parameter named `key` holds a credential."""
    lowered = key.lower()
    return any(word in lowered for word in SECRET_WORDS)


def mask_url(url: str) -> str:
    """`url` with its password and credential parameters replaced by `***`."""
    masked = _URL_PASSWORD.sub(lambda m: m["head"] + MASK + "@", url)
    return _URL_PARAMETER.sub(lambda m: m["head"] + MASK, masked)


def mask_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """Spark settings with the value of every credential key replaced by `***`."""
    return {key: MASK if is_secret_key(key) else value for key, value in conf.items()}


def secrets_in_url(url: str | None) -> list[str]:
    """The secret values a URL holds (its password and credential parameters), raw and percent-decoded."""
    if not url:
        return []
    found = [m["secret"] for m in _URL_PASSWORD.finditer(url)]
    found += [m["secret"] for m in _URL_PARAMETER.finditer(url)]
    return found + [unquote(value) for value in found]


def remember(values: Iterable[str | None]) -> None:
    """Add secret values to those `mask` removes from any text, for the rest of this process."""
    _remembered.update(v for v in values if v and len(v) >= _MIN_REMEMBERED)


def mask(text: str) -> str:
    """`text` with URL passwords, credential parameters and every remembered secret value replaced."""
    masked = mask_url(text)
    # Longest first: a secret that contains another must not be half-replaced.
    for value in sorted(_remembered, key=len, reverse=True):
        masked = masked.replace(value, MASK)
    return masked


def mask_json(value: Any) -> Any:
    """A JSON-like value with `mask` applied to every string in it (keys included)."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, Mapping):
        return {mask_json(k): mask_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_json(v) for v in value]
    return value
