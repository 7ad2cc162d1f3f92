"""Login throttling by address as well as by account (django-axes' handler, AXES_HANDLER).

Axes locks a username at one address out after AXES_FAILURE_LIMIT failures (settings). One address
that tries many accounts once each (a password sprayed over the user list) is not caught by that, so
here an address is also locked out, for every account, once its failures over all accounts within
AXES_COOLOFF_TIME reach LOGIN_ADDRESS_FAILURE_LIMIT. Set that well above the per-account limit: a lab
or office behind one NAT address shares it.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_cool_off
from axes.models import AccessAttempt


class AddressAwareHandler(AxesDatabaseHandler):
    def is_locked(self, request, credentials: dict | None = None) -> bool:
        return super().is_locked(request, credentials) or address_failures(request) >= \
            settings.LOGIN_ADDRESS_FAILURE_LIMIT


def address_failures(request) -> int:
    """Failed logins from the request's address over all accounts within the cool-off time."""
    address = getattr(request, "axes_ip_address", None)
    if not address:
        return 0
    since = timezone.now() - get_cool_off(request)
    return AccessAttempt.objects.filter(ip_address=address, attempt_time__gte=since).aggregate(
        n=Sum("failures_since_start"))["n"] or 0
