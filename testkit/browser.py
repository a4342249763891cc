"""Driving the viewer in a real browser: Debian's Chromium, headless, through Selenium.

Used by the end-to-end tests and `benchmarks/viewer.py`. Nothing is downloaded: the
browser and its driver are the Debian packages `chromium` and `chromium-driver`
(`scripts/apt-packages.txt`), found at the paths below or on PATH.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
DRIVER_PATHS = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")


class BrowserUnavailable(RuntimeError):
    """Chromium or its driver is not installed."""


def _find(paths: tuple[str, ...], name: str) -> str:
    for p in paths:
        if Path(p).is_file():
            return p
    found = shutil.which(name)
    if found:
        return found
    raise BrowserUnavailable(
        f"{name} not found (looked in {', '.join(paths)} and PATH); "
        "install the Debian packages chromium and chromium-driver (bash scripts/setup.sh)"
    )


def browser_available() -> bool:
    """Whether a headless Chromium can be started here."""
    try:
        _find(CHROMIUM_PATHS, "chromium")
        _find(DRIVER_PATHS, "chromedriver")
    except BrowserUnavailable:
        return False
    return True


@contextmanager
def headless_chromium(width: int = 1500, height: int = 1000) -> Iterator[Any]:
    """A Selenium WebDriver on headless Chromium, closed on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = _find(CHROMIUM_PATHS, "chromium")
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        f"--window-size={width},{height}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(_find(DRIVER_PATHS, "chromedriver")), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver: Any, script: str, timeout: float = 15.0, poll: float = 0.05) -> Any:
    """Poll a JavaScript expression until it is truthy; return its value.

    Raises:
        TimeoutError: it stayed falsy for `timeout` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(f"return ({script})")
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"still false after {timeout} s: {script}")
        time.sleep(poll)


def open_viewer(driver: Any, url: str, timeout: float = 15.0) -> float:
    """Load the page and wait until it has drawn its first step; return the seconds taken."""
    t0 = time.perf_counter()
    driver.get(url)
    wait_for(driver, "document.body.dataset.ready === '1'", timeout)
    return time.perf_counter() - t0
