"""The quick PBKDF2 hash that tests/prod and the documentation reader give their users is read by production's
hashers, and stored again at production's iteration count on the first sign-in."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher, check_password, identify_hasher, make_password
from django.test import override_settings

from tests.doubles.quick_hashing import QUICK_HASHER, QuickPBKDF2PasswordHasher

PRODUCTION = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]


def test_production_reads_the_quick_hash_and_stores_it_again_at_its_own_count():
    with override_settings(PASSWORD_HASHERS=[QUICK_HASHER]):
        quick = make_password("correct horse")
    assert quick.startswith(f"pbkdf2_sha256${QuickPBKDF2PasswordHasher.iterations}$")
    stored = []
    with override_settings(PASSWORD_HASHERS=PRODUCTION):
        assert not check_password("wrong horse", quick, setter=stored.append)
        assert stored == []
        assert check_password("correct horse", quick, setter=stored.append)
        assert stored == ["correct horse"]  # Django's check_password calls the setter to hash it again
        again = make_password("correct horse")
        assert identify_hasher(again).decode(again)["iterations"] == PBKDF2PasswordHasher.iterations
        assert PBKDF2PasswordHasher.iterations > QuickPBKDF2PasswordHasher.iterations
