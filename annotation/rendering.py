"""Content as raters see it: text, sanitised markdown, highlighted code, sandboxed HTML, inline diffs
conversation turns and agent trajectories (annotation/trajectory_html.py). Pure functions of (content, kind) -> safe HTML; no database.

    render_content(content, kind, span_root=False) -> SafeString
    render_markdown(text) -> SafeString          # for guidelines too
    sandboxed_srcdoc(html) -> str                # the document an HTML output runs as

Highlighting (spans) needs an element whose text is exactly the raw content, so that character
offsets computed in the browser are offsets into the stored text: `data-span-root` marks it. Text
and code are shown that way; for markdown, diff and conversation outputs a plain-text view is added.

HTML outputs run in <iframe sandbox="allow-scripts" srcdoc=...>: no allow-same-origin, so the frame
has an opaque origin (no cookies, no access to the page), and a CSP inside the document forbids
every network request (default-src 'none').
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import (
    CssLexer,
    HtmlLexer,
    JavascriptLexer,
    PythonLexer,
    TextLexer,
    get_lexer_by_name,
    guess_lexer,
)
from pygments.util import ClassNotFound

from annotation.trajectory_html import trajectory_html

SANDBOX_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
_CSP_META = f'<meta http-equiv="Content-Security-Policy" content="{SANDBOX_CSP}">'

_ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
    "ins", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup", "table", "tbody", "td", "th",
    "thead", "tr", "ul", "div",
}  # no img: an image URL would make the rater's browser call a third party
_ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "span": {"class"}, "code": {"class"}, "pre": {"class"},
                       "div": {"class"}, "th": {"align"}, "td": {"align"}}


# ---------------------------------------------------------------- code


def _lexer_for(content: str, language: str = ""):
    options = {"stripnl": False, "ensurenl": False}  # keep text identical to the content (span offsets)
    if language:
        try:
            return get_lexer_by_name(language, **options)
        except ClassNotFound:
            pass
    head = content.lstrip()[:200].lower()
    if head.startswith(("<!doctype", "<html", "<svg", "<div", "<head", "<body", "<script")):
        return HtmlLexer(**options)
    if re.match(r"(def |import |from \w+ import|class \w+[:(])", head):
        return PythonLexer(**options)
    if re.match(r"(function |const |let |var |import |export |//|/\*|\(\s*\)\s*=>|d3\.)", head):
        return JavascriptLexer(**options)
    if re.match(r"[.#]?[\w-]+\s*\{", head):
        return CssLexer(**options)
    try:
        lexer = guess_lexer(content)
        return type(lexer)(**options)
    except ClassNotFound:
        return TextLexer(**options)


@lru_cache(maxsize=2048)
def highlight_code(content: str, language: str = "") -> str:
    """Pygments spans without a wrapper; the text of the result equals `content`."""
    out = highlight(content, _lexer_for(content, language), HtmlFormatter(nowrap=True))
    if not content.endswith("\n") and out.endswith("\n"):
        out = out[:-1]
    return out


def _code_block(content: str, language: str = "", *, span_root: bool = True, label: str = "Code") -> str:
    root = " data-span-root" if span_root else ""
    return (f'<pre class="hl content-code" tabindex="0" aria-label="{escape(label)}"{root}>'
            f"<code>{highlight_code(content, language)}</code></pre>")


# ---------------------------------------------------------------- markdown


def _fence(code: str, lang: str, _attrs) -> str:
    return f'<pre class="hl"><code>{highlight_code(code, lang or "")}</code></pre>'


_MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False, "highlight": _fence})
_MD.enable(["table", "strikethrough"])


@lru_cache(maxsize=1024)
def _markdown_html(text: str) -> str:
    # markdown-it already escapes raw HTML (html=False); nh3 is the second wall.
    return nh3.clean(_MD.render(text), tags=_ALLOWED_TAGS, attributes=_ALLOWED_ATTRIBUTES,
                     url_schemes={"http", "https", "mailto"}, link_rel="noopener noreferrer nofollow")


def render_markdown(text: str) -> SafeString:
    return mark_safe(_markdown_html(text))


# ---------------------------------------------------------------- HTML outputs


def sandboxed_srcdoc(html: str) -> str:
    """The document a rendered HTML output runs as: a CSP placed before any of its own content.

    A meta CSP governs only what the parser meets after it, so it goes first (after a leading
    doctype), never after the output's own <head>: a script or a commented-out <head> earlier
    in the output would otherwise run unrestricted. The parser opens html/head for the meta.
    """
    doctype = re.match(r"\s*<!doctype[^>]*>", html, re.IGNORECASE)
    cut = doctype.end() if doctype else 0
    return (html[:cut] or "<!DOCTYPE html>") + _CSP_META + html[cut:]


def _html_output(content: str, *, label: str, span_root: bool) -> str:
    preview, sandboxed, source = _("Rendered preview"), _("(sandboxed, offline)"), _("Source")
    return (
        '<div class="html-output">'
        f'<figure class="preview"><figcaption>{preview} <span class="muted">{sandboxed}</span></figcaption>'
        f'<iframe sandbox="allow-scripts" referrerpolicy="no-referrer" title="{escape(label)} · {preview}" '
        f'srcdoc="{escape(sandboxed_srcdoc(content))}"></iframe></figure>'
        f'<div class="source"><div class="source-label">{source}</div>'
        f"{_code_block(content, 'html', span_root=span_root, label=label + ' · ' + source)}</div>"
        "</div>"
    )


# ---------------------------------------------------------------- diffs and conversations


_DIFF = re.compile(r"\[-(.*?)-\]|\{\+(.*?)\+\}", re.DOTALL)


def parse_diff(content: str) -> list[tuple[str, str]]:
    """wdiff notation -> [(op, text)] with op in {"=", "-", "+"}."""
    parts: list[tuple[str, str]] = []
    pos = 0
    for m in _DIFF.finditer(content):
        if m.start() > pos:
            parts.append(("=", content[pos:m.start()]))
        parts.append(("-", m.group(1)) if m.group(1) is not None else ("+", m.group(2)))
        pos = m.end()
    if pos < len(content):
        parts.append(("=", content[pos:]))
    return parts


def _diff_html(content: str) -> str:
    parts = parse_diff(content)
    deleted, inserted, before_label, after_label = _("deleted:"), _("inserted:"), _("Before"), _("After")
    inline = []
    for op, text in parts:
        if op == "=":
            inline.append(escape(text))
        elif op == "-":
            inline.append(f'<del><span class="sr-only">{deleted} </span>{escape(text)}</del>')
        else:
            inline.append(f'<ins><span class="sr-only">{inserted} </span>{escape(text)}</ins>')
    before = "".join(t for op, t in parts if op != "+")
    after = "".join(t for op, t in parts if op != "-")
    return (
        f'<div class="diff"><p class="diff-inline" dir="auto">{"".join(inline)}</p>'
        f'<dl class="diff-sides"><dt>{before_label}</dt><dd dir="auto">{escape(before)}</dd><dt>{after_label}</dt>'
        f'<dd dir="auto">{escape(after)}</dd></dl>'
        "</div>"
    )


def parse_conversation(content: str) -> list[tuple[str, str]]:
    """A JSON list of {"role", "content"} turns, or lines like "User: ..." -> [(role, text)]."""
    try:
        data = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        data = None
    if isinstance(data, list) and all(isinstance(t, dict) for t in data):
        return [(str(t.get("role") or t.get("speaker") or ""), str(t.get("content") or t.get("text") or ""))
                for t in data]
    turns: list[tuple[str, str]] = []
    for line in content.splitlines():
        m = re.match(r"^\s*(user|assistant|system|human|ai|bot|agent|customer)\s*:\s?(.*)$", line, re.IGNORECASE)
        if m:
            turns.append((m.group(1), m.group(2)))
        elif turns:
            turns[-1] = (turns[-1][0], turns[-1][1] + "\n" + line)
        elif line.strip():
            turns.append(("", line))
    return turns


def _conversation_html(content: str) -> str:
    rows = []
    for role, text in parse_conversation(content):
        css = re.sub(r"[^a-z]", "", role.lower()) or "other"
        rows.append(f'<div class="turn turn-{css}"><div class="turn-role">{escape(role.title() or _("Turn"))}</div>'
                    f'<div class="turn-text" dir="auto">{escape(text)}</div></div>')
    return f'<div class="conversation">{"".join(rows)}</div>'


# ---------------------------------------------------------------- entry point


def _plain(content: str, *, span_root: bool) -> str:
    root = " data-span-root" if span_root else ""
    return f'<div class="content-text" dir="auto"{root}>{escape(content)}</div>'


def _with_plain_view(html: str, content: str, span_root: bool) -> str:
    if not span_root:
        return html
    summary = _("Plain text (select passages to highlight)")
    return (html + f'<details class="plain-view"><summary>{summary}</summary>'
            + _plain(content, span_root=True) + "</details>")


def render_content(content: str, kind: str, *, span_root: bool = False, label: str = "Content",
                   language: str = "") -> SafeString:
    """Safe HTML for one context or response. `label` names it for assistive technology."""
    if kind == "markdown":
        html = _with_plain_view(f'<div class="content-md" dir="auto">{_markdown_html(content)}</div>', content, span_root)
    elif kind == "code":
        html = _code_block(content, language, span_root=span_root, label=label)
    elif kind == "html":
        html = _html_output(content, label=label, span_root=span_root)
    elif kind == "diff":
        html = _with_plain_view(_diff_html(content), content, span_root)
    elif kind == "conversation":
        html = _with_plain_view(_conversation_html(content), content, span_root)
    elif kind == "trajectory":
        html = trajectory_html(content, label=label, span_root=span_root)
    else:
        html = _plain(content, span_root=span_root)
    return mark_safe(html)
