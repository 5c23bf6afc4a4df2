"""Statement Markdown -> sanitised HTML (Markdown, then nh3 with an allow-list)."""

from __future__ import annotations

import functools

import markdown  # type: ignore[import-untyped]
import nh3

MARKDOWN_EXTENSIONS = ("fenced_code", "tables", "sane_lists")
ALLOWED_TAGS = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "code", "em", "h1", "h2", "h3", "h4", "h5",
        "h6", "hr", "i", "kbd", "li", "ol", "p", "pre", "span", "strong", "sub", "sup",
        "table", "tbody", "td", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "code": {"class"}, "span": {"class"}}
# A code block scrolls sideways where its lines are wider than the card: the keyboard must be
# able to reach it to scroll it (WCAG 2.1.1; axe's scrollable-region-focusable).
SET_ATTRIBUTES = {"pre": {"tabindex": "0"}}


@functools.lru_cache(maxsize=256)  # a pure function of the text: re-saving, previews, imports
def render_statement(text: str) -> str:
    html = markdown.markdown(text, extensions=list(MARKDOWN_EXTENSIONS), output_format="html")
    return nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        set_tag_attribute_values={tag: dict(values) for tag, values in SET_ATTRIBUTES.items()},
    )
