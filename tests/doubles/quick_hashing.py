"""A password hash that a production server reads, made quickly.

Tests that sign users in to a server running production's settings (gunicorn, the documentation reader's
runserver) cannot hash with the test settings' MD5, which production does not know. Django's PBKDF2 at its
1,000,000 iterations cost about 0.3 s of CPU a user made. The iteration count is stored in the hash, so a hash
of 1,000 iterations is read by production's own PBKDF2 hasher, which stores the password again at its own count
on the first sign-in (`must_update`)."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher

QUICK_HASHER = "tests.doubles.quick_hashing.QuickPBKDF2PasswordHasher"


class QuickPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1_000
