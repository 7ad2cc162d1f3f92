"""Python client of Concord's REST API (`Client(url, token)`); see clients/python/README.md."""

from concord_client.client import Client, ReleaseChecksumError
from concord_client.errors import ConcordError
from concord_client.trajectories import steps, trajectory_row, with_steps

__all__ = ["Client", "ConcordError", "ReleaseChecksumError", "steps", "trajectory_row", "with_steps"]
