import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from django.urls import get_resolver  # noqa: E402  (settings must be loaded first)

from config.checks import require_secret_key  # noqa: E402

require_secret_key()
# Every view, and what they import (pandas, SciPy, matplotlib), now rather than in each worker's first request
# (with gunicorn.conf.py's preload_app, once, in the master).
get_resolver().url_patterns  # noqa: B018
