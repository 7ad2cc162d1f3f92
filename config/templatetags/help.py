"""{% help_link "report" %}: a link to the docs page that explains the page it sits on (config/help_links.py)."""

from django import template
from django.utils.html import format_html

from config.help_links import HELP, help_url

register = template.Library()


@register.simple_tag
def help_link(key: str, label: str = "") -> str:
    if key not in HELP:  # a typo fails at render time, in the tests, not as a dead link
        raise template.TemplateSyntaxError(f"help_link: no help entry {key!r} (config/help_links.py)")
    return format_html('<a class="help-link" href="{}">{}</a>', help_url(key), label or HELP[key].label)


@register.filter
def reads_docs(user) -> bool:
    """Whether the header offers the documentation: signed-in staff and members, not crowd participants."""
    from annotation.access import is_crowd_participant

    return bool(user.is_authenticated) and not is_crowd_participant(user)
