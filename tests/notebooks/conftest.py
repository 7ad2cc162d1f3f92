from tests.client.conftest import token_for  # noqa: F401  (fixture)
