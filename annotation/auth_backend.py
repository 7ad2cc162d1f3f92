"""Django's ModelBackend, with the signed-in user read by one prepared statement.

Every request of the rating loop loads its user from the session; through the ORM that lookup was
a seventh of the loop's CPU in the web process (compiling the same query each time). Everything
else (authenticate, permissions, is_active) is Django's.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend as DjangoModelBackend

from annotation.db import instance_from_row, prepared_cursor, select_columns

PATH = "annotation.auth_backend.ModelBackend"  # what a session stores; settings.AUTHENTICATION_BACKENDS lists it


class ModelBackend(DjangoModelBackend):
    def get_user(self, user_id):
        User = get_user_model()
        try:
            pk = User._meta.pk.to_python(user_id)
        except Exception:  # noqa: BLE001 - a session with a malformed id is no user, as in Django's
            return None
        with prepared_cursor() as cursor:
            cursor.execute(f"SELECT {select_columns(User, 'u')} FROM {User._meta.db_table} u WHERE u.id = %s", [pk])
            row = cursor.fetchone()
        if row is None:
            return None
        user = instance_from_row(User, row)
        return user if self.user_can_authenticate(user) else None
