"""Headless Chromium (through Playwright) for the tests of the HTML viewer: whether it
can run here, and a capture of a viewer page at chosen frames (canvas screenshots,
readout texts, every request the page made, console and page errors)."""

from __future__ import annotations

import os
import shutil

_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def _chromium():
    """The path of a Chromium executable on PATH, or None."""
    for name in _CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def browser_available():
    """None when headless Chromium via Playwright can be used; otherwise the reason why not."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright)"
    if _chromium() is None:
        return f"no Chromium executable on PATH (looked for {', '.join(_CANDIDATES)})"
    return None


def require_browser():
    """Skip the calling test when headless Chromium cannot run here, saying why; under
    `CI=true` (`.ci/run` installs Chromium) fail instead."""
    import pytest

    from _ci import IN_CI

    reason = browser_available()
    if reason is not None:
        if IN_CI:
            pytest.fail(f"CI=true but the viewer tests cannot run: {reason}")
        pytest.skip(reason)


def capture(html_path, scrub_values, size=(800, 600), points=()):
    """Open the viewer page `html_path` in headless Chromium at viewport `size`, wait
    until it is ready, then for each frame index in `scrub_values` move the time
    scrubber there (as a user's drag does: its value and an `input` event) and take a
    PNG screenshot of the `#scene` canvas and the readout panel's text.

    Returns `{"screenshots": [png bytes], "readouts": [str], "requests": [url],
    "errors": [str], "projected": [(x, y)]}`: `requests` holds every URL the page
    requested (the page itself included), `errors` every console error and uncaught
    page error, and `projected` the canvas pixel at which the page draws each of the
    global `points` (`mbdjaxViewer.project`).
    """
    from playwright.sync_api import sync_playwright

    url = "file://" + os.path.abspath(html_path)
    out = {"screenshots": [], "readouts": [], "requests": [], "errors": [], "projected": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=_chromium(), headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": int(size[0]), "height": int(size[1])})
            page.on("request", lambda request: out["requests"].append(request.url))
            page.on("console", lambda msg: msg.type == "error" and out["errors"].append(f"console: {msg.text}"))
            page.on("pageerror", lambda exc: out["errors"].append(f"page: {exc}"))
            page.goto(url)
            try:
                page.wait_for_function("window.MBDJAX_VIEWER_READY === true", timeout=15_000)
            except Exception as exc:
                raise RuntimeError(f"the viewer never became ready; errors: {out['errors']}") from exc
            canvas = page.locator("#scene")
            for i in scrub_values:
                page.evaluate("i => { const s = document.getElementById('scrub'); s.value = String(i); "
                              "s.dispatchEvent(new Event('input')); }", int(i))
                page.evaluate("() => new Promise(resolve => requestAnimationFrame(() => resolve()))")
                out["screenshots"].append(canvas.screenshot(type="png"))
                out["readouts"].append(page.evaluate("() => window.mbdjaxViewer.readout()"))
            out["projected"] = [page.evaluate("p => window.mbdjaxViewer.project(p[0], p[1], p[2])", list(map(float, p)))
                                for p in points]
        finally:
            browser.close()
    return out
