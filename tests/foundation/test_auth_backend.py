"""The session user read by annotation.auth_backend (one prepared statement) is Django's own user."""

import pytest
from django.contrib.auth.backends import ModelBackend as DjangoModelBackend

from annotation.auth_backend import ModelBackend
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def test_the_user_read_equals_the_orm_s():
    user = make_user("backend-user")
    user.first_name, user.is_staff = "Ada", True
    user.save()
    ours, django = ModelBackend().get_user(str(user.pk)), DjangoModelBackend().get_user(str(user.pk))
    assert ours == django
    assert {f.attname: getattr(ours, f.attname) for f in type(user)._meta.concrete_fields} == \
        {f.attname: getattr(django, f.attname) for f in type(user)._meta.concrete_fields}


@pytest.mark.parametrize("user_id", ["999999", "not a number", ""])
def test_no_user_for_an_unknown_or_malformed_id(user_id):
    assert ModelBackend().get_user(user_id) is None


def test_an_inactive_user_is_signed_out_as_django_does():
    user = make_user("backend-inactive")
    user.is_active = False
    user.save()
    assert ModelBackend().get_user(user.pk) is None


def test_a_signed_in_request_is_served_through_it(client):
    from django.contrib.auth import BACKEND_SESSION_KEY

    user = make_user("backend-login")
    client.force_login(user)
    assert client.session[BACKEND_SESSION_KEY] == "annotation.auth_backend.ModelBackend"
    assert client.get("/").status_code == 200
