"""Django's Redis cache backend, keeping its redis.Redis client objects.

Django builds a new redis.Redis for every cache call, and its constructor fills a table of
about 170 response callbacks: a quarter of a millisecond of CPU on each submit of the rating
loop (a session read and the routing flag). The client is thread-safe and Django's cache
objects are per thread anyway; the connection pools were already kept.
"""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class _KeptClients(RedisCacheClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients: dict[int, object] = {}

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = self._client(connection_pool=self._get_connection_pool(write))
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = _KeptClients
