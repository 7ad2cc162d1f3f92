"""Python client of Concord's REST API (`Client(url, token)`); see clients/python/README.md."""

from concord_client.client import Client, ReleaseChecksumError
from concord_client.errors import ConcordError

__all__ = ["Client", "ConcordError", "ReleaseChecksumError"]
