"""What "the page fits" means, measured in the browser: nothing is wider than the window,
and every table fits inside its card (the .panel around it) without a scrollbar.

Shared by the Chromium tests (tests/browser/test_*.py import it by name).
"""

from __future__ import annotations

from typing import Any

LAPTOP = {"width": 1366, "height": 900}
TABLET = {"width": 768, "height": 1024}
PHONE = {"width": 390, "height": 844}
# name -> (viewport, browser context options)
SCREENS: dict[str, tuple[dict[str, int], dict[str, Any]]] = {
    "1366": (LAPTOP, {}),
    "768": (TABLET, {}),
    "390": (PHONE, {"is_mobile": True, "has_touch": True}),
}

# Returns a list of sentences, one per problem; [] when everything fits. A table's card is
# its closest .panel (the <main> element where it has none); a wrapper (.table-wrap) that
# needs its scrollbar counts as a table that does not fit.
OVERFLOWS_JS = """() => {
  const slack = 1;  // sub-pixel rounding
  const problems = [];
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
    + (el.classList.length ? '.' + [...el.classList].join('.') : '');
  const viewport = document.documentElement.clientWidth;
  const pageWidth = document.documentElement.scrollWidth;
  if (pageWidth > viewport + slack) {
    problems.push(`the page is ${pageWidth}px wide in a ${viewport}px window`);
  }
  const clipped = (el) => {
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== 'visible') return true;
    }
    return false;
  };
  for (const el of document.body.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    if (box.width > 1 && box.right > viewport + slack && !clipped(el)) {
      problems.push(`${name(el)} reaches ${Math.round(box.right)}px in a ${viewport}px window`);
    }
  }
  for (const table of document.querySelectorAll('main table')) {
    if (!table.getClientRects().length) continue;  // not rendered (closed <details>)
    const card = table.closest('.panel') || table.closest('main');
    const style = getComputedStyle(card);
    const cardBox = card.getBoundingClientRect();
    const left = cardBox.left + card.clientLeft + parseFloat(style.paddingLeft);
    const right = left + card.clientWidth
      - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const box = table.getBoundingClientRect();
    const label = `${name(table)} in ${name(card)}`;
    if (box.left < left - slack || box.right > right + slack) {
      problems.push(`${label}: table ${Math.round(box.left)}-${Math.round(box.right)}px,`
        + ` card content ${Math.round(left)}-${Math.round(right)}px`);
    }
    if (table.scrollWidth > Math.ceil(box.width) + slack) {
      problems.push(`${label}: content ${table.scrollWidth}px wide in ${Math.round(box.width)}px`);
    }
    const wrap = table.closest('.table-wrap');
    if (wrap && wrap.scrollWidth > wrap.clientWidth + slack) {
      problems.push(`${label}: scrolls sideways (${wrap.scrollWidth}px in ${wrap.clientWidth}px)`);
    }
  }
  return problems;
}"""

OPEN_DETAILS_JS = "() => document.querySelectorAll('details').forEach(d => { d.open = true; })"


def overflows(page: Any) -> list[str]:
    """Every overflow on the page as it is laid out now, with <details> opened."""
    page.evaluate(OPEN_DETAILS_JS)
    return list(page.evaluate(OVERFLOWS_JS))


def table_count(page: Any) -> int:
    return int(page.evaluate("() => document.querySelectorAll('main table').length"))


def overflows_on_every_screen(
    signed_in: Any,
    user: Any,
    pages: dict[str, str],
    screenshot: Any,
    screens: tuple[str, ...] = tuple(SCREENS),
) -> dict[str, list[str]]:
    """Opens each page (name -> address) as `user` on every screen (or those of `screens`),
    saves a screenshot fit-<screen>-<name>.png, and returns the overflows found by
    "<screen>px <name>"."""
    found: dict[str, list[str]] = {}
    for screen in screens:
        viewport, options = SCREENS[screen]
        page = signed_in(user, viewport, **options)
        for name, address in pages.items():
            page.goto(address)
            problems = overflows(page)
            screenshot(page, f"fit-{screen}-{name}")
            if problems:
                found[f"{screen}px {name}"] = problems
        page.context.close()
    return found
