"""Screenshots of the viewer at two steps of a recorded game (for the docs).

Run: python -m scripts.viewer_screenshots RUN OUT_DIR [--steps A B]
Writes OUT_DIR/viewer-step-A.png and OUT_DIR/viewer-step-B.png (headless Chromium).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from annotation.viewer.server import start_background
from testkit.browser import headless_chromium, open_viewer, wait_for


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, nargs=2, default=None)
    parser.add_argument("--analyst", action="store_true")
    args = parser.parse_args()
    events = [json.loads(x) for x in (args.run / "events.jsonl").read_text().splitlines()]
    if args.steps is None:
        roam = [
            e["step"] for e in events if e["kind"] == "step_start" and e["phase"] == "free_roam"
        ]
        kills = [e["step"] for e in events if e["kind"] == "kill"]
        first = roam[min(2, len(roam) - 1)]
        second = kills[0] if kills else roam[len(roam) // 2]
        args.steps = [first, second]
    args.out.mkdir(parents=True, exist_ok=True)
    viewer = start_background(args.run)
    try:
        with headless_chromium(1500, 1000) as driver:
            for step in args.steps:
                flag = "&analyst=1" if args.analyst else ""
                open_viewer(driver, f"{viewer.url}?step={step}{flag}")
                wait_for(driver, f"document.body.dataset.step === '{step}'")
                wait_for(
                    driver,
                    "[...document.querySelectorAll('#frames img')].every(i => i.complete)",
                )
                time.sleep(0.3)
                path = args.out / f"viewer-step-{step}.png"
                driver.save_screenshot(str(path))
                print(path)
    finally:
        viewer.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
