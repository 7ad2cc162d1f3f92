import redis
from django.conf import settings
from django.db import connection


def test_database_is_postgresql(db):
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        assert cursor.fetchone()[0].startswith("PostgreSQL")


def test_redis_answers():
    client = redis.Redis.from_url(settings.REDIS_URL)
    assert client.ping() is True
    info = client.info("server")
    assert info["redis_version"]
