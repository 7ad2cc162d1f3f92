import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from config.checks import require_secret_key  # noqa: E402  (settings must be loaded first)

require_secret_key()
